/**
 * The package's NodeNetwork: the agent layer's NodeNetwork with the real preflight (checkNode) wired in as the step
 * start() runs first. The preflight sits above the agent (its probes run the agent's own rules), so the wiring lives
 * here, in the one place that sees both.
 */
import {
  NodeNetwork as AgentNodeNetwork,
  type NodeNetworkOptions as AgentNodeNetworkOptions,
} from '../agent/node-network.js';
import type { NodePreflight, PreflightWiring } from '../agent/node-preflight.js';
import { checkNode, checkPreflightOptions } from './check-node.js';
import { PreflightError } from './errors.js';
import type { PreflightOptions } from './types.js';

/**
 * NodeNetworkOptions configure the package's NodeNetwork: the agent's options, with `preflight` also taking the
 * preflight's own settings.
 */
export interface NodeNetworkOptions extends Omit<AgentNodeNetworkOptions, 'preflight'> {
  /**
   * Whether start() first runs checkNode for this backend, `ipv6` and `hostProcRoot` (the rows they require only:
   * `requiredOnly`) and rejects with AgentError
   * step 'preflight' (its cause a PreflightError naming what is missing) before it changes anything. Default: true
   * with the real backends, false when any backend (ipset, iptables, nftables, netns, rtnetlink) is given, since
   * those are not the kernel. false skips it (for callers that run it themselves); an object runs it with those
   * preflight options (`probes`, `path`, `netnsSysctls`); a function (a NodePreflight) runs instead of it. The
   * report is kept per process.
   */
  preflight?: boolean | NodePreflight | Pick<PreflightOptions, 'probes' | 'path' | 'netnsSysctls'>;
}

/**
 * checkNodePreflight is the wiring of checkNode as NodeNetwork's preflight: the settings are checked at once (throws
 * InvalidArgumentError naming `options.<name>`), and the check resolves a PreflightError when the node lacks a
 * feature; it rejects as checkNode does.
 */
export const checkNodePreflight: PreflightWiring = (choice, request) => {
  const options: PreflightOptions = { ...(choice === true ? {} : (choice as PreflightOptions)), ...request, requiredOnly: true };
  checkPreflightOptions(options);
  return async () => {
    const report = await checkNode(options);
    return report.ok ? undefined : new PreflightError(report);
  };
};

/**
 * NodeNetwork is what a node agent drives (see the agent layer's NodeNetwork for every call), with the real
 * preflight run by start() by default. The constructor throws InvalidArgumentError naming a bad option
 * (`options.<name>`).
 */
export class NodeNetwork extends AgentNodeNetwork {
  constructor(options: NodeNetworkOptions = {}) {
    super(options, checkNodePreflight);
  }
}
