/**
 * How NodeNetwork's steps report and fail: each step published on `podnet:agent:step` with its outcome, and whether
 * a failure is worth retrying.
 */
import { type AgentStepMessage, agentStepChannel, outcomeOf, timing } from '../diagnostics.js';
import { IptablesLockTimeoutError, IptablesRestoreError, IpsetError, RtnetlinkError } from '../errors.js';
import { ProxyError } from '../proxy/errors.js';
import { AgentError, ProbeOwnerConflictError, type AgentStep } from './errors.js';
import { KubeletUidError } from './nft-kubelet.js';

/** publishStep publishes a step on `podnet:agent:step`; its outcome is the code of what made it fail. */
export function publishStep(step: AgentStep, pod: string | undefined, description: string, start: number, error?: AgentError): void {
  const about = { step, pod, description };
  let message: AgentStepMessage;
  if (error === undefined) message = { ...about, ...timing(start, 'ok') };
  else {
    const cause = error.cause === undefined ? error : error.cause;
    const outcome = outcomeOf(cause);
    message = { ...about, ...timing(start, outcome === 'ERR_UNKNOWN' ? error.code : outcome, error) };
  }
  agentStepChannel.publish(message);
}

/** settled waits for every promise, then resolves with their values or rejects with the first failure. */
export async function settled<T>(promises: readonly Promise<T>[]): Promise<T[]> {
  const results = await Promise.allSettled(promises);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
}

/** retryable tells whether retrying the same call can help after err. */
export function retryable(err: unknown): boolean {
  // No kubelet yet (it may be restarting) can change; kubelets of several uids or an unreadable procfs will not.
  if (err instanceof KubeletUidError) return err.uids.length === 0 && err.cause === undefined;
  if (err instanceof ProbeOwnerConflictError) return false; // stale entries are not cleared by retrying
  if (err instanceof IptablesLockTimeoutError) return true;
  if (err instanceof IptablesRestoreError) return false; // the rules themselves were refused
  if (err instanceof IpsetError) return err.code === 'ETIMEDOUT' || err.code === 'ENOBUFS' || err.code === 'IPSET_ERR_BUSY';
  // The kernel refused the route or rule itself (ENODEV: no lo, EINVAL): the same call will be refused again.
  if (err instanceof RtnetlinkError) return err.code === 'ETIMEDOUT' || err.code === 'EAGAIN' || err.code === 'ENOBUFS';
  // No proxy yet, a lost connection, a refused add: a proxy that (re)connects or retries its listeners fixes each.
  if (err instanceof ProxyError) return true;
  const code = (err as { code?: unknown })?.code;
  return code === 'ETIMEDOUT' || code === 'EAGAIN' || code === 'ERR_PROCESS_TIMEOUT';
}
