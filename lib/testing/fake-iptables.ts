/**
 * FakeIptables: an in-memory iptables that speaks the same argv and restore input as the real programs, for tests
 * without root. It implements IptablesRunner, so `Iptables.open({ runner: new FakeIptables() })` uses it exactly as
 * it would use iptables-restore and iptables-save.
 *
 * Semantics modelled on iptables 1.8.9, and held to it by the contract suite and by a differential test of random
 * restore scripts against both real backends: --noflush; `:CHAIN` creates or flushes user chains and sets built-in
 * policies; -A, -I, -D (by rule or number), -F, -X, -N, -P; a user chain with rules or references cannot be deleted;
 * a jump to a missing chain fails; NAT targets outside the nat table (and, approximately, outside their hooks) are
 * refused "by the kernel" when the finished table is committed. Legacy runs each command as it reads it; nft applies
 * chain declarations at once, runs the other commands at COMMIT (a missing jump target is reported with the COMMIT
 * line) and reports kernel refusals after every userspace check. Each table block is applied to a copy and kept only
 * at COMMIT; a failure leaves earlier committed blocks in place. Errors are printed in the backend's own format with
 * its exit code. Not modelled: rule text is kept as given (iptables-save's canonical rewriting is not imitated),
 * loops between chains, NAT hooks of rules in user chains, and nft's parse-time cache (a -D or -I position checked
 * against a chain that a `:CHAIN` line of the same block flushes).
 */
import { PodnetSystemError } from '../errors.js';
import { BUILTIN_CHAINS, TABLES, type IptablesTable } from '../iptables/rule-set.js';
import { renderArgs, tokenizeLine } from '../iptables/quote.js';
import type { IptablesRunResult, IptablesRunner } from '../iptables/runner.js';

type Chain = { policy: string | null; rules: string[][] };
type Table = Map<string, Chain>;
type Model = Map<IptablesTable, Table>;

/** Targets that are not chains (extensions the real iptables loads). */
const BUILTIN_TARGETS = new Set([
  'ACCEPT', 'DROP', 'RETURN', 'QUEUE', 'REJECT', 'LOG', 'NFLOG', 'NFQUEUE', 'DNAT', 'SNAT', 'MASQUERADE', 'REDIRECT',
  'MARK', 'CONNMARK', 'TPROXY', 'NOTRACK', 'CT', 'TCPMSS', 'TRACE', 'CLASSIFY', 'DSCP', 'TOS', 'TTL', 'HL', 'SET',
  'CHECKSUM', 'AUDIT',
]);
// The hooks (built-in chains of the nat table) where the kernel accepts each NAT target.
const NAT_HOOKS: Readonly<Record<string, readonly string[]>> = {
  DNAT: ['PREROUTING', 'OUTPUT'],
  REDIRECT: ['PREROUTING', 'OUTPUT'],
  SNAT: ['POSTROUTING', 'INPUT'],
};
const VERSION = 'v1.8.9';

class RestoreFailure extends Error {
  constructor(
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(stderr);
  }
}

interface Tool {
  family: 4 | 6;
  backend: 'nft' | 'legacy';
  kind: 'restore' | 'save';
  /** How the program names itself in messages. */
  prog: string;
}

function parseTool(argv0: string | undefined): Tool | undefined {
  const m = /^(ip6?)tables(?:-(nft|legacy))?-(restore|save)$/.exec((argv0 ?? '').split('/').pop() ?? '');
  if (!m) return undefined;
  const family = m[1] === 'ip6' ? 6 : 4;
  const backend = m[2] === 'legacy' ? 'legacy' : 'nft';
  const base = `${m[1]}tables`;
  const prog = backend === 'legacy' ? `${base}-${m[3]}` : `${base}-nft-${m[3]}`;
  return { family, backend, kind: m[3] as 'restore' | 'save', prog };
}

function targetOf(args: readonly string[]): string | undefined {
  let target: string | undefined;
  for (let i = 0; i < args.length - 1; i++) {
    if (args[i] === '-j' || args[i] === '--jump' || args[i] === '-g' || args[i] === '--goto') target = args[i + 1];
  }
  return target;
}

function same(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function newTable(name: IptablesTable): Table {
  return new Map(BUILTIN_CHAINS[name].map((c) => [c, { policy: 'ACCEPT', rules: [] }]));
}

function copyTable(table: Table): Table {
  return new Map([...table].map(([name, c]) => [name, { policy: c.policy, rules: c.rules.map((r) => [...r]) }]));
}

/** FakeIptablesDump is a copy of one backend's tables: table -> chain -> { policy, rules }. */
export type FakeIptablesDump = Record<string, Record<string, { policy: string | null; rules: string[][] }>>;

/** FakeIptables keeps separate state per IP family and backend, as the kernel does. */
export class FakeIptables implements IptablesRunner {
  readonly #models = new Map<string, Model>();
  /** Every argv run, in order (read-only copies). */
  readonly #calls: string[][] = [];

  /** calls lists the argv of every run so far. */
  get calls(): readonly (readonly string[])[] {
    return this.#calls.map((c) => [...c]);
  }

  /** dump returns a deep copy of the state of one backend and family. */
  dump(backend: 'nft' | 'legacy' = 'nft', family: 4 | 6 = 4): FakeIptablesDump {
    const out: FakeIptablesDump = {};
    for (const [name, table] of this.#model(family, backend)) {
      out[name] = Object.fromEntries([...table].map(([c, s]) => [c, { policy: s.policy, rules: s.rules.map((r) => [...r]) }]));
    }
    return out;
  }

  /**
   * run answers one iptables program run as the real program would (IptablesRunner.run): exit code, stdout and
   * stderr. Rejects with PodnetSystemError `ENOENT` for a program it does not model, as for one not installed.
   */
  async run(argv: readonly string[], stdin?: string): Promise<IptablesRunResult> {
    this.#calls.push([...argv]);
    const tool = parseTool(argv[0]);
    if (!tool) {
      // What the real runner reports for a program that is not installed.
      throw new PodnetSystemError(`ENOENT: no such file or directory, execve '${argv[0] ?? ''}'`, 'ENOENT', -2, {
        syscall: 'execve',
        path: argv[0] ?? '',
      });
    }
    if (argv[1] === '--version' || argv[1] === '-V') {
      return { exitCode: 0, stdout: `${tool.prog} ${VERSION} (${tool.backend === 'nft' ? 'nf_tables' : 'legacy'})\n`, stderr: '' };
    }
    const model = this.#model(tool.family, tool.backend);
    if (tool.kind === 'save') return this.#save(tool, model, argv.slice(1));
    try {
      this.#restore(tool, model, argv.slice(1), stdin ?? '');
      return { exitCode: 0, stdout: '', stderr: '' };
    } catch (err) {
      if (err instanceof RestoreFailure) return { exitCode: err.exitCode, stdout: '', stderr: err.stderr };
      throw err;
    }
  }

  #model(family: 4 | 6, backend: 'nft' | 'legacy'): Model {
    const key = `${family}/${backend}`;
    let model = this.#models.get(key);
    if (!model) {
      model = new Map();
      this.#models.set(key, model);
    }
    return model;
  }

  #save(tool: Tool, model: Model, args: readonly string[]): IptablesRunResult {
    let only: string | undefined;
    for (let i = 0; i < args.length; i++) {
      if (args[i] === '-t' || args[i] === '--table') only = args[++i];
      else return { exitCode: 2, stdout: '', stderr: `${tool.prog} ${VERSION}: unknown option "${args[i] ?? ''}"\n` };
    }
    const out: string[] = [`# Generated by ${tool.prog} ${VERSION} (fake)`];
    for (const [name, table] of model) {
      if (only !== undefined && name !== only) continue;
      out.push(`*${name}`);
      const builtins = BUILTIN_CHAINS[name];
      const chains = [...table].sort(([a], [b]) => {
        const ia = builtins.indexOf(a);
        const ib = builtins.indexOf(b);
        if (ia >= 0 || ib >= 0) return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib);
        return a < b ? -1 : a > b ? 1 : 0;
      });
      for (const [chain, state] of chains) out.push(`:${chain} ${state.policy ?? '-'} [0:0]`);
      for (const [chain, state] of chains) for (const rule of state.rules) out.push(`-A ${chain} ${renderArgs(rule)}`);
      out.push('COMMIT');
    }
    return { exitCode: 0, stdout: `${out.join('\n')}\n`, stderr: '' };
  }

  #restore(tool: Tool, model: Model, args: readonly string[], input: string): void {
    const header = `${tool.prog} ${VERSION} (${tool.backend === 'nft' ? 'nf_tables' : 'legacy'}):`;
    let noflush = false;
    for (const arg of args) {
      if (arg === '-n' || arg === '--noflush') noflush = true;
      else if (/^--wait(=\d+)?$/.test(arg) || arg === '-w') continue;
      else throw new RestoreFailure(2, `${header} unknown option "${arg}"\n`);
    }
    const failed = (line: number, detail?: string): RestoreFailure => {
      if (tool.backend === 'legacy' || detail === undefined) return new RestoreFailure(1, `${tool.prog}: line ${line} failed\n`);
      return new RestoreFailure(1, `${tool.prog}: line ${line} failed: ${detail}\n`);
    };
    const atLine = (line: number, message: string): RestoreFailure =>
      new RestoreFailure(2, `${header} ${message}\nError occurred at line: ${line}\nTry \`${tool.prog} -h' for more information.\n`);
    const batch = (line: number, op: string, errText: string, what: string): RestoreFailure =>
      new RestoreFailure(4, `${header} \nline ${line}: ${op} failed (${errText}): ${what}\n`);

    const lines = input.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    let name: IptablesTable | undefined;
    let work: Table | undefined;
    // Legacy runs each command as it reads it. nft applies chain declarations as it reads them but queues every
    // other command and runs the queue in order at COMMIT, where a jump to a missing chain is reported with the
    // COMMIT line. Both report what the kernel rejects only after every command ran.
    let queued: { n: number; tokens: string[] }[] = [];
    let commitLine = 0;
    let kernelFailure: { n: number; failure: RestoreFailure } | undefined;

    const chainOf = (n: number, chain: string | undefined, missing = 'No chain/target/match by that name.'): Chain => {
      const found = chain === undefined ? undefined : work!.get(chain);
      if (!found) throw failed(n, missing);
      return found;
    };
    /** checkJump throws when the rule jumps to a chain that does not exist; it runs before the chain lookup. */
    const checkJump = (n: number, rule: string[]): void => {
      const target = targetOf(rule);
      if (target === undefined || BUILTIN_TARGETS.has(target) || work!.has(target)) return;
      if (tool.backend === 'legacy') throw atLine(n, `Couldn't load target \`${target}':No such file or directory\n`);
      throw atLine(commitLine, `Chain '${target}' does not exist`);
    };
    // Only built-in chains are checked: in a user chain the kernel's verdict depends on which hooks reach it.
    // Outside the nat table both backends refuse NAT targets. Within it the hook check is an approximation: legacy
    // usually refused DNAT in POSTROUTING in the differential test but once accepted it, so that test keeps NAT
    // targets out of the nat table.
    const natMisplaced = (chain: string, rule: readonly string[]): boolean => {
      const target = targetOf(rule);
      const hooks = target === undefined ? undefined : NAT_HOOKS[target];
      if (hooks === undefined || work!.get(chain)?.policy === null) return false;
      return name !== 'nat' || !hooks.includes(chain);
    };
    // The kernel validates the finished table at COMMIT (a misplaced rule removed again in the same block is never
    // seen); nft then names the line that added the rule, legacy the COMMIT line.
    let added = new Map<readonly string[], { n: number; op: string }>();
    const checkNat = (n: number, _chain: string, op: string, rule: string[]): void => {
      added.set(rule, { n, op });
    };
    // The kernel's first complaint: the earliest line among refused batch operations and misplaced NAT rules.
    const kernelVerdict = (): RestoreFailure | undefined => {
      let first = kernelFailure;
      for (const [chain, st] of work!) {
        for (const rule of st.rules) {
          if (!natMisplaced(chain, rule)) continue;
          if (tool.backend === 'legacy') return failed(commitLine);
          const at = added.get(rule) ?? { n: commitLine, op: 'RULE_APPEND' };
          if (!first || at.n < first.n) first = { n: at.n, failure: batch(at.n, at.op, 'Invalid argument', `rule in chain ${chain}`) };
        }
      }
      return first?.failure;
    };

    const execute = (n: number, tokens: string[]): void => {
      const table = work!;
      const [cmd, chain] = tokens;
      const rest = tokens.slice(2);
      switch (cmd) {
        case '-A':
        case '--append': {
          checkJump(n, rest);
          const state = chainOf(n, chain);
          checkNat(n, chain!, 'RULE_APPEND', rest);
          state.rules.push(rest);
          return;
        }
        case '-I':
        case '--insert': {
          let position = 1;
          let rule = rest;
          if (rest[0] !== undefined && /^\d+$/.test(rest[0])) {
            position = Number(rest[0]);
            rule = rest.slice(1);
          }
          checkJump(n, rule);
          const state = chainOf(n, chain);
          if (position < 1 || position > state.rules.length + 1) throw failed(n, 'Index of insertion too big.');
          checkNat(n, chain!, 'RULE_INSERT', rule);
          state.rules.splice(position - 1, 0, rule);
          return;
        }
        case '-D':
        case '--delete': {
          const byNumber = rest.length === 1 && /^\d+$/.test(rest[0]!);
          const bad = 'Bad rule (does a matching rule exist in that chain?).';
          if (!byNumber) checkJump(n, rest);
          const state = chainOf(n, chain, bad);
          const index = byNumber ? Number(rest[0]) - 1 : state.rules.findIndex((r) => same(r, rest));
          if (index < 0 || index >= state.rules.length) throw failed(n, bad);
          state.rules.splice(index, 1);
          return;
        }
        case '-F':
        case '--flush':
          if (chain === undefined) {
            for (const state of table.values()) state.rules = [];
          } else {
            const state = table.get(chain);
            if (!state) throw failed(n, 'No chain/target/match by that name.');
            state.rules = [];
          }
          return;
        case '-N':
        case '--new-chain':
          if (chain === undefined || table.has(chain)) throw failed(n, 'Chain already exists.');
          table.set(chain, { policy: null, rules: [] });
          return;
        case '-X':
        case '--delete-chain': {
          const victims = chain === undefined ? [...table].filter(([, st]) => st.policy === null).map(([c]) => c) : [chain];
          for (const victim of victims) {
            const state = table.get(victim);
            if (!state) throw failed(n, 'No chain/target/match by that name.');
            if (state.policy !== null) throw failed(n, 'Invalid argument');
            // A chain that still has rules, or that any rule jumps to, is busy.
            const inUse = [...table.values()].some((st) => st.rules.some((r) => targetOf(r) === victim));
            if (inUse || state.rules.length > 0) {
              if (tool.backend === 'legacy') throw failed(n);
              // nft drops the chain from its cache anyway; only the kernel refuses, when the batch is sent.
              kernelFailure ??= { n, failure: batch(n, 'CHAIN_DEL', 'Device or resource busy', `chain ${victim}`) };
            }
            table.delete(victim);
          }
          return;
        }
        case '-P':
        case '--policy': {
          const state = chainOf(n, chain);
          if (state.policy === null || rest[0] === undefined) throw failed(n, 'Bad built-in chain name');
          state.policy = rest[0];
          return;
        }
        default:
          throw atLine(n, `unknown option "${cmd ?? ''}"`);
      }
    };

    lines.forEach((raw, i) => {
      const n = i + 1;
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) return;
      if (work === undefined) {
        if (!line.startsWith('*')) throw failed(n);
        const t = line.slice(1);
        if (!(TABLES as readonly string[]).includes(t)) throw failed(n, 'Table does not exist (do you need to insmod?)');
        name = t as IptablesTable;
        work = copyTable(model.get(name) ?? newTable(name));
        if (!noflush) {
          for (const [c, state] of work) {
            if (state.policy === null) work.delete(c);
            else state.rules = [];
          }
        }
        queued = [];
        added = new Map();
        kernelFailure = undefined;
        return;
      }
      if (line === 'COMMIT') {
        commitLine = n;
        for (const command of queued) execute(command.n, command.tokens);
        const kernel = kernelVerdict();
        if (kernel) throw kernel;
        model.set(name!, work);
        work = undefined;
        return;
      }
      if (line.startsWith(':')) {
        const m = /^:(\S+)\s+(\S+)/.exec(line);
        if (!m) throw failed(n);
        const existing = work.get(m[1]!);
        if (existing && existing.policy !== null) {
          if (m[2] !== '-') existing.policy = m[2]!;
        } else if (existing) {
          existing.rules = [];
        } else {
          work.set(m[1]!, { policy: null, rules: [] });
        }
        return;
      }
      let tokens: string[];
      try {
        tokens = tokenizeLine(line);
      } catch {
        throw atLine(n, 'unterminated quote');
      }
      if (tool.backend === 'legacy') execute(n, tokens);
      else queued.push({ n, tokens });
    });
    if (work !== undefined) throw new RestoreFailure(1, `${tool.prog}: COMMIT expected at line ${lines.length + 1}\n`);
  }
}
