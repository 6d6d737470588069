/**
 * The preflight as NodeNetwork sees it: a step start() runs first, injected, so the agent layer does not reach
 * across to lib/preflight/. The package's NodeNetwork (lib/preflight/node-network.ts) wires the real checkNode in;
 * a caller may pass its own check as the `preflight` option.
 */
import { checkOptions, invalidType } from '../validate.js';

/** NodePreflightRequest is the configuration start() asks the preflight about. */
export interface NodePreflightRequest {
  /** The rule backend. */
  backend: 'iptables' | 'nftables';
  /** Whether IPv6 is handled. */
  ipv6: boolean;
  /** The host's procfs. */
  hostProcRoot: string;
}

/**
 * NodePreflight checks what the node offers for a configuration. It resolves undefined when the node has everything,
 * or an error naming what it lacks (start() rejects with AgentError step 'preflight', not retryable, with that error
 * as its cause); it rejects when it cannot check at all (start() rejects with AgentError step 'preflight' then too,
 * its retryable by the rejection).
 */
export type NodePreflight = (request: NodePreflightRequest) => Promise<Error | undefined>;

/**
 * PreflightWiring turns the `preflight` option's `true` or object form (the preflight's own settings) into the check
 * start() runs for request. It throws InvalidArgumentError for bad settings, so the constructor refuses them.
 */
export type PreflightWiring = (choice: true | object, request: NodePreflightRequest) => NodePreflight;

/**
 * PreflightChoice is the `preflight` option: true or false, a check of the caller's own, or the settings the
 * package's preflight takes (see NodeNetworkOptions.preflight).
 */
export type PreflightChoice = boolean | NodePreflight | object;

/**
 * preflightOf is the check start() runs for these options, or undefined when none runs: false skips it; a function
 * is the check; undefined runs the wired one only with the real backends (fakes are not the kernel); true and an
 * object run the wired one. Throws InvalidArgumentError (`options.preflight`) for anything else, and for true or an
 * object when nothing is wired.
 */
export function preflightOf(
  choice: unknown,
  usesFakes: boolean,
  request: NodePreflightRequest,
  wiring: PreflightWiring | undefined,
): (() => Promise<Error | undefined>) | undefined {
  if (choice === false) return undefined;
  if (typeof choice === 'function') return () => (choice as NodePreflight)(request);
  if (choice === undefined && (usesFakes || wiring === undefined)) return undefined;
  const settings = choice === undefined || choice === true ? true : checkOptions<object>('options.preflight', choice);
  if (wiring === undefined) throw invalidType('options.preflight', 'false or a function (no preflight is wired in)', choice);
  const check = wiring(settings, request);
  return () => check(request);
}
