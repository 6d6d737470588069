/**
 * The public types of FakeZtunnel: its options, what it records (workloads, received messages, protocol errors)
 * and how a connection ends.
 */
import type { ZdsRequest, ZdsWorkloadInfo } from '../../proxy/zds-messages.js';

/** FakeZtunnelOptions are the options of FakeZtunnel.connect. */
export interface FakeZtunnelOptions {
  /**
   * The version its hello announces: any int32, so a test can announce a wrong one (NOT_USED too, although proto3
   * would encode it as an empty message). Default ZdsVersion.V1.
   */
  version?: number;
  /**
   * Deadline in ms for connecting, for each send (hello, acks), and the default deadline of waitFor and
   * waitForSnapshot. Default 5000, ztunnel's own read/write deadline.
   */
  timeoutMs?: number;
}

/** FakeZtunnelWorkload is a workload the fake holds: added and not deleted or dropped since. */
export interface FakeZtunnelWorkload {
  /** The pod's UID, as the add named it. */
  readonly uid: string;
  /** What the add said the pod is. */
  readonly workload: ZdsWorkloadInfo;
  /** Netns.id ("<dev>:<ino>") of the namespace fd the add carried; the fake holds that fd open. */
  readonly netnsId: string;
}

/**
 * FakeZtunnelMessage is one request as received, whether it was applied or refused. An add's netnsId is undefined
 * when it did not carry exactly one network namespace fd.
 */
export type FakeZtunnelMessage =
  | { readonly kind: 'add'; readonly uid: string; readonly workload: ZdsWorkloadInfo; readonly netnsId: string | undefined }
  | { readonly kind: 'keep'; readonly uid: string }
  | { readonly kind: 'del'; readonly uid: string }
  | { readonly kind: 'snapshotSent' };

/**
 * FakeZtunnelProtocolErrorKind says what the agent did wrong: an add without an fd (`missingFd`), with more than one
 * or any message with more than two (`extraFds`), an fd on a keep, del or snapshotSent (`unexpectedFd`), an fd that
 * is not a network namespace (`notNetns`), bytes that are not a WorkloadRequest (`undecodable`), a message over
 * 1024 bytes (`tooLarge`).
 */
export type FakeZtunnelProtocolErrorKind = 'missingFd' | 'extraFds' | 'unexpectedFd' | 'notNetns' | 'undecodable' | 'tooLarge';

/** FakeZtunnelProtocolError is one thing the agent did wrong; `message` is also the error text of the ack it got. */
export interface FakeZtunnelProtocolError {
  /** What was wrong. */
  readonly kind: FakeZtunnelProtocolErrorKind;
  /** What the fake answered, as the ack's error text. */
  readonly message: string;
  /** The request's kind and uid, when the message decoded. */
  readonly request: ZdsRequest['kind'] | undefined;
  /** The request's uid, when the message decoded. */
  readonly uid: string | undefined;
}

/**
 * FakeZtunnelDisconnect says why a connection ended: the agent closed it (`eof`), disconnect() (`disconnect`),
 * close() (`close`), or a receive or send failed (`error`, such as ECONNRESET or EPIPE, with the error).
 */
export interface FakeZtunnelDisconnect {
  /** Who ended the connection. */
  readonly reason: 'eof' | 'disconnect' | 'close' | 'error';
  /** The receive or send failure, for reason `error`. */
  readonly error?: Error;
}

/** FakeZtunnelWaitOptions are the options of waitFor and waitForSnapshot. */
export interface FakeZtunnelWaitOptions {
  /** Deadline in ms (0..2^31-1). Default the fake's timeoutMs. */
  timeoutMs?: number;
  /**
   * How many to skip. waitFor: messages, by index into `received` (default 0: already received ones count, so none
   * is missed; pass `received.length` taken before the action to see only later ones). waitForSnapshot: snapshots,
   * compared with `snapshots` (default its value at the call: the next one).
   */
  after?: number;
}
