/** The preflight report as an operator reads it: a fixed-width table, one line per feature, then the verdict. */
import type { PreflightReport, PreflightRow } from './types.js';

function status(row: PreflightRow): string {
  if (row.ok) return 'ok';
  return row.required ? 'MISSING' : 'absent';
}

function pad(text: string, width: number): string {
  return text.length >= width ? text : text + ' '.repeat(width - text.length);
}

/**
 * formatReport renders a report as a table (STATUS, FEATURE, NEEDED BY, DETAIL) and a last line saying whether the
 * configuration can run. `MISSING` marks a required feature that is not there; `absent` one that is optional.
 */
export function formatReport(report: PreflightReport): string {
  const head = ['STATUS', 'FEATURE', 'NEEDED BY', 'DETAIL'];
  const lines = report.rows.map((r) => [status(r), r.feature, r.needed_by, r.detail.replaceAll('\n', ' ')]);
  const widths = [0, 1, 2].map((c) => Math.max(head[c]!.length, ...lines.map((l) => l[c]!.length)));
  const render = (cols: string[]): string => cols.map((c, i) => (i < 3 ? pad(c, widths[i]!) : c)).join('  ').trimEnd();
  const config = `backend ${report.backend}${report.ipv6 ? ' with IPv6' : ''}`;
  const verdict = report.ok
    ? `ok: this node has every feature ${config} needs`
    : `missing: ${report.missing.length} feature(s) ${config} needs: ${report.missing.map((r) => r.feature).join(', ')}`;
  return [render(head), ...lines.map(render), '', verdict, ''].join('\n');
}
