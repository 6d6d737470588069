/** The preflight's error: a node that lacks what a configuration needs, with the report that says so. */
import { PodnetError } from '../errors.js';
import { describeMissing } from './check-node.js';
import type { PreflightReport } from './types.js';

/**
 * PreflightError (`ERR_PREFLIGHT_MISSING`) means the node lacks a feature the configuration needs; its message
 * names each missing feature with what the probe found and what provides it, and `report` is the whole report.
 */
export class PreflightError extends PodnetError {
  /** The report that found features missing. */
  readonly report: PreflightReport;

  constructor(report: PreflightReport) {
    const config = `the ${report.backend} backend${report.ipv6 ? ' with IPv6' : ''}`;
    super(`the node lacks what ${config} needs: ${describeMissing(report)}`, 'ERR_PREFLIGHT_MISSING');
    this.report = report;
  }
}
