/**
 * Probes of the rule backends, each in a fresh namespace and each the way the agent uses the feature: the probe
 * sets created and written as ProbeSet does, the agent's own iptables rule sets applied with the detected backend,
 * the agent's own nftables tables applied in one batch, and a batch carrying a generation id.
 */
import { hostProbeRules, inpodRules } from '../agent/rules.js';
import { NFT_TABLES, nftHostRules, nftInpodRules } from '../agent/nft-rules.js';
import { NftablesGenerationError } from '../errors.js';
import { Ipset } from '../ipset/client.js';
import type { IpsetCreateOptions, IpsetEntry } from '../ipset/types.js';
import type { IptablesBackend } from '../iptables/backend.js';
import { Iptables } from '../iptables/iptables.js';
import { NetnsRunner } from '../iptables/runner.js';
import type { Netns } from '../netns.js';
import { Nftables } from '../nftables/client.js';
import { SAFE_PATH } from '../spawn.js';
import { PathRunner } from './path-runner.js';
import type { PreflightContext } from './types.js';

const TIMEOUT_MS = 30_000;
const OWNER = 'podnet-preflight';

// A client opened in the scratch namespace for one probe, and closed whatever the probe does.
async function withClient<C extends { close(): void }, T>(
  opening: Promise<C>,
  fn: (client: C) => Promise<T>,
): Promise<T> {
  const client = await opening;
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

function withIpset<T>(ns: Netns, fn: (ipset: Ipset) => Promise<T>): Promise<T> {
  return withClient(Ipset.open({ netns: ns }), fn);
}

/** ipsetProbe returns a probe that creates a set of that type, adds an entry with its extensions and reads it back. */
export function ipsetProbe(create: IpsetCreateOptions, entry: IpsetEntry): (context: PreflightContext) => Promise<string> {
  return (context) =>
    context.scratch((ns) =>
      withIpset(ns, async (ipset) => {
        await ipset.create('podnet-preflight', create);
        await ipset.add('podnet-preflight', entry);
        const header = await ipset.header('podnet-preflight');
        for await (const got of ipset.entries('podnet-preflight')) {
          if (create.comment && got.comment !== entry.comment) throw new Error(`the entry's comment reads back as ${JSON.stringify(got.comment)}`);
          return `${header.type} revision ${header.revision}`;
        }
        throw new Error('the entry added does not list');
      }),
    );
}

async function openIptables(context: PreflightContext, ns: Netns, family: 4 | 6, backend: 'auto' | IptablesBackend): Promise<Iptables> {
  // The standard folders are where the agent finds its programs: then the probe runs them exactly as it does.
  const runner = context.path === SAFE_PATH ? new NetnsRunner(ns, { timeoutMs: TIMEOUT_MS }) : new PathRunner(ns, context.path, TIMEOUT_MS);
  return Iptables.open({ netns: ns, family, backend, runner });
}

// What `backend: 'auto'` picks in a namespace holding no rules, per check and family. Every scratch namespace is
// such a namespace, so one detection (a save run per backend) answers for every probe of a check, as the agent
// detects once at start and opens every pod's client with what it found.
const detections = new WeakMap<PreflightContext, Map<4 | 6, Promise<IptablesBackend>>>();

function detectedBackend(context: PreflightContext, ns: Netns, family: 4 | 6): Promise<IptablesBackend> {
  let perFamily = detections.get(context);
  if (!perFamily) detections.set(context, (perFamily = new Map()));
  let pending = perFamily.get(family);
  if (!pending) {
    pending = openIptables(context, ns, family, 'auto').then((ipt) => ipt.backend);
    perFamily.set(family, pending);
  }
  return pending;
}

/** openDetected opens a client for family with the backend 'auto' picks in an empty namespace (see above). */
async function openDetected(context: PreflightContext, ns: Netns, family: 4 | 6): Promise<Iptables> {
  return openIptables(context, ns, family, await detectedBackend(context, ns, family));
}

/** iptablesBackendsProbe tells which iptables backends run, with their versions; it fails when none does. */
export async function iptablesBackendsProbe(context: PreflightContext): Promise<string> {
  return context.scratch(async (ns) => {
    // Independent runs, so they overlap: each backend's version, and what detection picks. The detection runs in
    // this namespace for the other probes too, so it is waited for before the namespace goes, whatever is found.
    const detecting = detectedBackend(context, ns, 4);
    const detected = detecting.then(
      (backend) => backend,
      () => undefined,
    );
    const tries = await Promise.all(
      (['nft', 'legacy'] as const).map(async (backend) => {
        try {
          return { found: `${backend} ${(await openIptables(context, ns, 4, backend)).version}` };
        } catch (err) {
          const code = (err as { code?: unknown }).code;
          return { why: `${backend}: ${(err as Error).message}${typeof code === 'string' ? ` [${code}]` : ''}` };
        }
      }),
    );
    const found = tries.flatMap((t) => (t.found === undefined ? [] : [t.found]));
    await detected;
    if (found.length === 0) throw new Error(`no iptables backend runs (${tries.map((t) => t.why).join('; ')})`);
    return `${found.join(', ')}; detected: ${await detecting}`;
  });
}

/** iptablesInpodProbe applies the agent's in-pod rule set (mark, connmark, CT --zone, REDIRECT). */
export function iptablesInpodProbe(family: 4 | 6): (context: PreflightContext) => Promise<string> {
  return (context) =>
    context.scratch(async (ns) => {
      const ipt = await openDetected(context, ns, family);
      await ipt.apply(inpodRules({ family }));
      return `applied with ${ipt.family === 6 ? 'ip6tables' : 'iptables'} ${ipt.version} (${ipt.backend})`;
    });
}

/** iptablesHostProbe creates a probe set and applies the host's probe SNAT (owner --socket-exists, set, SNAT). */
export function iptablesHostProbe(family: 4 | 6): (context: PreflightContext) => Promise<string> {
  return (context) =>
    context.scratch(async (ns) => {
      await withIpset(ns, (ipset) =>
        ipset.create(`istio-inpod-probes-v${family}`, { type: 'hash:ip', family: family === 6 ? 'inet6' : 'inet', comment: true }),
      );
      const ipt = await openDetected(context, ns, family);
      await ipt.apply(hostProbeRules({ family }));
      return `applied with ${ipt.family === 6 ? 'ip6tables' : 'iptables'} ${ipt.version} (${ipt.backend})`;
    });
}

function withNftables<T>(ns: Netns, fn: (nft: Nftables) => Promise<T>): Promise<T> {
  return withClient(Nftables.open({ netns: ns }), fn);
}

/** nftInpodProbe applies the agent's three in-pod inet tables (meta, ct, mark, redirect, socket) in one batch. */
export async function nftInpodProbe(context: PreflightContext): Promise<string> {
  return context.scratch((ns) =>
    withNftables(ns, async (nft) => {
      const ruleset = nftInpodRules({ ipv6: context.ipv6 });
      await nft.apply(ruleset);
      return `${ruleset.tables.length} inet tables applied in one batch`;
    }),
  );
}

/** nftHostProbe applies the host's table (probe sets, skuid SNAT) and writes and reads a set element's comment. */
export async function nftHostProbe(context: PreflightContext): Promise<string> {
  return context.scratch((ns) =>
    withNftables(ns, async (nft) => {
      await nft.apply(nftHostRules({ kubeletUid: 0, ipv6: context.ipv6 }));
      const table = { family: 'inet' as const, name: NFT_TABLES.nat };
      await nft.addElement(table, 'istio-inpod-probes-v4', { address: '10.0.0.1', comment: OWNER });
      const elements = await nft.elements(table, 'istio-inpod-probes-v4');
      if (elements[0]?.comment !== OWNER) throw new Error(`a set element's comment reads back as ${JSON.stringify(elements[0]?.comment)}`);
      return 'table applied; set element comment written and read back';
    }),
  );
}

/** nftGenerationProbe runs a batch at the current generation, and checks that one at a stale generation is refused. */
export async function nftGenerationProbe(context: PreflightContext): Promise<string> {
  return context.scratch((ns) =>
    withNftables(ns, async (nft) => {
      const table = { family: 'inet' as const, name: 'podnet-preflight' };
      const stale = await nft.generation();
      await nft.run(nft.transaction().addTable(table), { generation: stale });
      try {
        await nft.run(nft.transaction().deleteTable(table), { generation: stale });
      } catch (err) {
        if (err instanceof NftablesGenerationError) return `batches carry the generation (now ${await nft.generation()})`;
        throw err;
      }
      throw new Error('a batch at a stale generation was applied: the kernel ignores NFNL_BATCH_GENID');
    }),
  );
}
