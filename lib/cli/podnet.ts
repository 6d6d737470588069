#!/usr/bin/env node
/**
 * The `podnet` command. `podnet doctor` runs the preflight for a configuration and prints its report as a table (or
 * JSON with --json); it exits 0 when the node has every feature the configuration needs, 1 when one is missing, and
 * 2 for a usage error. It is what an operator runs inside the agent's container on a node that misbehaves.
 */
import { parseArgs } from 'node:util';

import { InvalidArgumentError } from '../errors.js';
import { checkNode } from '../preflight/check-node.js';
import { formatReport } from '../preflight/format.js';
import type { PreflightOptions } from '../preflight/types.js';

const USAGE = `usage: podnet doctor [--backend iptables|nftables] [--ipv6] [--json] [--host-proc DIR] [--path DIRS]

  --backend    the rule backend the agent uses (default iptables)
  --ipv6       the agent handles IPv6 too
  --json       print the report as JSON
  --host-proc  the host's procfs as mounted in this container (default /proc)
  --path       where iptables programs are looked up (default the standard sbin and bin folders)
`;

/** DoctorArgs is a parsed `podnet doctor` command line. */
interface DoctorArgs {
  options: PreflightOptions;
  json: boolean;
}

function parseDoctor(argv: string[]): DoctorArgs {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      backend: { type: 'string' },
      ipv6: { type: 'boolean' },
      json: { type: 'boolean' },
      'host-proc': { type: 'string' },
      path: { type: 'string' },
    },
  });
  const backend = values.backend ?? 'iptables';
  if (backend !== 'iptables' && backend !== 'nftables') throw new Error(`--backend takes iptables or nftables, not '${backend}'`);
  const options: PreflightOptions = { backend, ipv6: values.ipv6 ?? false };
  if (values['host-proc'] !== undefined) options.hostProcRoot = values['host-proc'];
  if (values.path !== undefined) options.path = values.path;
  return { options, json: values.json ?? false };
}

/** main runs a command line and resolves the exit status. */
async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (command !== 'doctor') {
    process.stderr.write(`podnet: unknown command ${command === undefined ? '(none)' : `'${command}'`}\n${USAGE}`);
    return 2;
  }
  let args: DoctorArgs;
  try {
    args = parseDoctor(rest);
  } catch (err) {
    process.stderr.write(`podnet doctor: ${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  let report;
  try {
    report = await checkNode(args.options);
  } catch (err) {
    // A refused option is a usage error; checkNode reports everything about the node as rows.
    const usage = err instanceof InvalidArgumentError ? USAGE : '';
    process.stderr.write(`podnet doctor: ${(err as Error).message}\n${usage}`);
    return 2;
  }
  process.stdout.write(args.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
  return report.ok ? 0 : 1;
}

process.exitCode = await main(process.argv.slice(2));
