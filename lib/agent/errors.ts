/** Errors of the agent layer: which step failed and whether retrying can help. */
import type { AgentStep } from '../diagnostics.js';
import { PodnetError } from '../errors.js';

/** AgentStep names the step of a pod or node flow that failed (AgentError.step); see diagnostics.ts. */
export type { AgentStep };

/**
 * AgentError wraps the failure of one step (`step`), keeps the original as `cause`, and says whether retrying the
 * same call can help (`retryable`). `code` is `ERR_AGENT_<STEP>`.
 */
export class AgentError extends PodnetError {
  /** The step that failed. */
  readonly step: AgentStep;
  /** Whether the same call may succeed when retried (a transient failure, not a refused rule or argument). */
  readonly retryable: boolean;
  /** The pod's UID, for steps of a pod. */
  readonly pod: string | undefined;

  constructor(step: AgentStep, message: string, options: { cause?: unknown; retryable: boolean; pod?: string }) {
    super(message, `ERR_AGENT_${step.toUpperCase().replaceAll('-', '_')}`, { cause: options.cause });
    this.step = step;
    this.retryable = options.retryable;
    this.pod = options.pod;
  }
}

/**
 * ProbeOwnerConflictError (`ERR_PROBE_OWNER_CONFLICT`) means, with `onConflict: 'error'`, that an IP is already in
 * the probe set for another pod. Both owners are named; nothing is changed.
 */
export class ProbeOwnerConflictError extends PodnetError {
  /** The IP address (IPv4-mapped IPv6 unmapped). */
  readonly ip: string;
  /** The UID of the pod that held the IP. */
  readonly previousOwner: string;
  /** The UID of the pod that claimed it. */
  readonly newOwner: string;

  constructor(ip: string, previousOwner: string, newOwner: string) {
    super(`probe set entry ${ip} is owned by '${previousOwner}', not taken over for '${newOwner}'`, 'ERR_PROBE_OWNER_CONFLICT');
    this.ip = ip;
    this.previousOwner = previousOwner;
    this.newOwner = newOwner;
  }
}
