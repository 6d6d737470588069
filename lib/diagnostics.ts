/**
 * podnet's diagnostics: one node:diagnostics_channel channel per kind of operation (the convention undici and pg
 * follow), each publishing one message when an operation ends, with what it was about, when it started, how long
 * it took and how it ended. Subscribers read them with `diagnostics_channel.subscribe(name, fn)`; podnet depends on
 * no metrics or tracing library. Nothing is measured or built while a channel has no subscriber: each publisher
 * checks `hasSubscribers` first. See docs/diagnostics.md.
 */
import { channel } from 'node:diagnostics_channel';

/** DIAGNOSTICS_CHANNELS names podnet's channels. */
export const DIAGNOSTICS_CHANNELS = {
  /** One ipset request to the kernel (or a NetlinkPeer): a create, an ADT batch, a header, a dump... */
  ipsetRequest: 'podnet:ipset:request',
  /** One run of an iptables program (iptables-restore, iptables-save) by an Iptables client. */
  iptablesRun: 'podnet:iptables:run',
  /** One program run inside a network namespace (runInNetns, startInNetns). */
  netnsSpawn: 'podnet:netns:spawn',
  /** One step of a NodeNetwork flow (addPod, removePod, syncSnapshot, start, stop, repair). */
  agentStep: 'podnet:agent:step',
  /** One CNI invocation a CniServer served (answered, or ended without an answer). */
  cniRequest: 'podnet:cni:request',
  /** One preflight (checkNode), run or answered from the process's earlier report. */
  preflightCheck: 'podnet:preflight:check',
} as const;

/** DiagnosticsChannelName is the name of one of podnet's channels. */
export type DiagnosticsChannelName = (typeof DIAGNOSTICS_CHANNELS)[keyof typeof DIAGNOSTICS_CHANNELS];

/**
 * OperationTiming is what every message carries. `outcome` is `'ok'` or the code of the error the operation ended
 * with (`IPSET_ERR_EXIST`, `ENOENT`, `ETIMEDOUT`, ...: the same `code` the error has), so it can label a
 * metric as it is; `error` is that error.
 */
export interface OperationTiming {
  /** When the operation started: `performance.now()` ms (add `performance.timeOrigin` for epoch ms). */
  startTime: number;
  /** How long it took, ms. */
  durationMs: number;
  /** `'ok'`, or the code of the error it ended with. */
  outcome: string;
  /** The error it ended with (absent when `outcome` is `'ok'`). */
  error?: unknown;
}

/**
 * IpsetRequestMode is how an ipset request went to the kernel: `sync` blocked the JS thread (addSync, testSync, a
 * set's header for them), `inline` was sent from the JS thread by an async call (small batches, test), `worker` went
 * to a libuv pool thread (bigger batches, creates, dumps).
 */
export type IpsetRequestMode = 'sync' | 'inline' | 'worker';

/**
 * IpsetRequestMessage is published on `podnet:ipset:request` for each request an Ipset client sends: one per
 * create, destroy, flush, rename, swap, header or name listing, test, coalesced batch of add()/del() calls, single
 * addSync/delSync, native batch call of addMany/delMany (an array is one; a stream one per chunk), list() and
 * entries() stream (each whole dump is one). For ADT requests `outcome` is `'ok'` when every entry was applied;
 * otherwise it is the request's error, or the first refused entry's code (`failed` says how many were refused).
 */
export interface IpsetRequestMessage extends OperationTiming {
  /** `create`, `destroy`, `flush`, `rename`, `swap`, `add`, `del`, `test`, `header`, `listNames`, `list`, `entries`, `protocol`. */
  command: string;
  /** The set (undefined for every-set commands and `listNames`); for rename and swap, the first. */
  set: string | undefined;
  /** The namespace of the client, as a path (undefined: the process's own, or a NetlinkPeer). */
  netns: string | undefined;
  mode: IpsetRequestMode;
  /** Entries sent (ADT, test) or received (list, entries); 0 for the others. */
  entries: number;
  /** Entries the kernel refused (ADT). */
  failed: number;
}

/** IptablesRunKind tells a restore from a save from anything else an Iptables client runs (a version query). */
export type IptablesRunKind = 'restore' | 'save' | 'other';

/**
 * IptablesRunMessage is published on `podnet:iptables:run` for each program an Iptables client runs, whatever its
 * runner (the real one, FakeIptables, your own). `outcome` is `'ok'` for exit status 0, `'ERR_EXIT_STATUS'` for a
 * program that exited otherwise (`exitCode` says how; the client's error then follows, such as
 * IptablesRestoreError), or the code of the run's own error (`ENOENT`, `ETIMEDOUT`).
 */
export interface IptablesRunMessage extends OperationTiming {
  kind: IptablesRunKind;
  /** The program and its arguments. */
  argv: readonly string[];
  /** Bytes of restore input given to the program. */
  inputBytes: number;
  /** The exit status (-1: killed by a signal); undefined when the run failed. */
  exitCode: number | undefined;
}

/**
 * NetnsSpawnMessage is published on `podnet:netns:spawn` for each program runInNetns or startInNetns ran, once it
 * ended (or could not start; arguments refused before anything starts publish nothing). `outcome` is `'ok'` for
 * exit status 0, `'ERR_EXIT_STATUS'` for another status or a signal, or the error's code (`ENOENT`, `EACCES`,
 * `ETIMEDOUT`, `ERR_OUTPUT_LIMIT`).
 */
export interface NetnsSpawnMessage extends OperationTiming {
  /** The program and its arguments, as given. */
  argv: readonly string[];
  /** The namespace, as a path (undefined: this process's own). */
  netns: string | undefined;
  /** The exit status, or null after a signal; undefined when the run failed. */
  exitCode: number | null | undefined;
  /** The signal that ended the program, or null; undefined when the run failed. */
  signal: string | null | undefined;
}

/**
 * AgentStep names a step of a pod or node flow: the `step` of an AgentStepMessage and of an AgentError (whose code is
 * `ERR_AGENT_<STEP>`, e.g. `ERR_AGENT_KUBELET_UID` for 'kubelet-uid', the nftables backend's detection of the
 * kubelet's uid at start(); `ERR_AGENT_PREFLIGHT` for 'preflight', the check of the node's features start() runs
 * first). It lives with the channel messages so that diagnostics depends on no layer above it.
 */
export type AgentStep = 'preflight' | 'kubelet-uid' | 'sets' | 'host-rules' | 'netns' | 'inpod-rules' | 'routes' | 'proxy' | 'probe-set';

/**
 * AgentStepMessage is published on `podnet:agent:step` for each step of a NodeNetwork flow. A failed step ends with
 * an AgentError (`error`), and `outcome` is the code of what caused it (`IPSET_ERR_EXIST`, `ERR_IPTABLES_RESTORE`,
 * ...), or the AgentError's own `ERR_AGENT_<STEP>` when the cause has none.
 */
export interface AgentStepMessage extends OperationTiming {
  step: AgentStep;
  /** The pod's UID, for the steps of a pod. */
  pod: string | undefined;
  /** What the step did, as its log line and error say ("adding the probe entries of pod 'p1'"). */
  description: string;
}

/**
 * CniRequestMessage is published on `podnet:cni:request` for each connection a CniServer served. `outcome` is `'ok'`
 * for a success answer; for a CNI error answer the code of what caused it (the handler's error's `code`, or
 * `'ERR_CNI'` for a refused request); `'ERR_CNI_WIRE'` (or the socket error's code, such as `ETIMEDOUT`) for one that
 * ended without an answer. `cniCode` is the CNI error code answered (0 for success, undefined without an answer).
 */
export interface CniRequestMessage extends OperationTiming {
  /** CNI_COMMAND (undefined when the request never got that far). */
  command: string | undefined;
  /** CNI_CONTAINERID (undefined when absent or the request never got that far). */
  containerId: string | undefined;
  /** The pod's UID from CNI_ARGS (K8S_POD_UID), when given. */
  pod: string | undefined;
  /** The CNI error code answered, 0 for success, undefined when nothing was answered. */
  cniCode: number | undefined;
}

/**
 * PreflightCheckMessage is published on `podnet:preflight:check` for each checkNode call that got past its argument
 * checks. `outcome` is `'ok'` when every required feature is there, `'ERR_PREFLIGHT_MISSING'` when one is not
 * (`missing` names them), or the code of an error the check itself ended with.
 */
export interface PreflightCheckMessage extends OperationTiming {
  /** The rule backend checked for. */
  backend: 'iptables' | 'nftables';
  /** Whether IPv6 was checked for. */
  ipv6: boolean;
  /** Whether the report was the process's earlier one for the same configuration (nothing probed). */
  cached: boolean;
  /** How many features the report has a row for. */
  rows: number;
  /** The features required and missing. */
  missing: string[];
}

/** DiagnosticsMessages maps each channel name to the message it publishes. */
export interface DiagnosticsMessages {
  'podnet:ipset:request': IpsetRequestMessage;
  'podnet:iptables:run': IptablesRunMessage;
  'podnet:netns:spawn': NetnsSpawnMessage;
  'podnet:agent:step': AgentStepMessage;
  'podnet:cni:request': CniRequestMessage;
  'podnet:preflight:check': PreflightCheckMessage;
}

/** The channels themselves, made once: publishers check `hasSubscribers` on these. */
export const ipsetRequestChannel = channel(DIAGNOSTICS_CHANNELS.ipsetRequest);
export const iptablesRunChannel = channel(DIAGNOSTICS_CHANNELS.iptablesRun);
export const netnsSpawnChannel = channel(DIAGNOSTICS_CHANNELS.netnsSpawn);
export const agentStepChannel = channel(DIAGNOSTICS_CHANNELS.agentStep);
export const cniRequestChannel = channel(DIAGNOSTICS_CHANNELS.cniRequest);
export const preflightCheckChannel = channel(DIAGNOSTICS_CHANNELS.preflightCheck);

/** outcomeOf is the outcome an error gives a message: its string `code`, or `'ERR_UNKNOWN'` when it has none. */
export function outcomeOf(error: unknown): string {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' && code !== '' ? code : 'ERR_UNKNOWN';
}

/** timing is the OperationTiming of an operation that started at `startTime`, ends now and came out as `outcome`. */
export function timing(startTime: number, outcome: string, error?: unknown): OperationTiming {
  const durationMs = performance.now() - startTime;
  return error === undefined ? { startTime, durationMs, outcome } : { startTime, durationMs, outcome, error };
}

/** failure is the OperationTiming of an operation that started at `startTime` and failed now with `error`. */
export function failure(startTime: number, error: unknown): OperationTiming {
  return { startTime, durationMs: performance.now() - startTime, outcome: outcomeOf(error), error };
}
