export { checkNode, describeMissing } from './check-node.js';
export { formatReport } from './format.js';
export { PreflightError } from './errors.js';
export type {
  PreflightBackend,
  PreflightContext,
  PreflightOptions,
  PreflightProbe,
  PreflightProbeFn,
  PreflightProbeId,
  PreflightReport,
  PreflightRow,
} from './types.js';
