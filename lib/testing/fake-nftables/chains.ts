/**
 * NEWCHAIN and DELCHAIN inside a batch (nf_tables_newchain / updchain / addchain / delchain): base chains with
 * type, hook, priority and policy; an update may change the policy only; a delete takes the chain's rules
 * with it unless NLM_F_NONREC, and is EBUSY while rules of other chains jump to it. An update that moves a base
 * chain to another hook or priority is EOPNOTSUPP, to another type EEXIST. Chains on devices (netdev, inet
 * ingress) keep the device names they are given, none included, and list them as the kernel does.
 */
import type { Attr, AttrTable } from '../netlink-kernel/codec.js';
import { CHAIN_TYPES, E, NFTA_CHAIN, NFTA_DEVICE_NAME, NFTA_HOOK, NLM_F_EXCL, NLM_F_NONREC, NLM_F_REPLACE } from './constants.js';
import type { ChainObj, Draft, TableObj } from './model.js';
import { type Request, be32, byHandle, byName, fail, nameOf, udataOf } from './request.js';
import { releaseRule } from './rules.js';
import { deleteTarget, lookupTable } from './tables.js';

/** NF_IP_PRI_CONNTRACK: a nat chain must hook in after conntrack. */
const PRI_CONNTRACK = -200;
const NFT_CHAIN_FLAGS = 0x7;
const NETDEV = 5;
const INET = 1;
/** NF_INET_INGRESS: the inet family's hook on devices (the netdev family numbers its ingress 0, egress 1). */
const INGRESS_INET = 5;

interface Hook {
  type: string;
  hook: number;
  priority: number;
  devices?: readonly string[];
}

/** onDevices tells a hook that runs on devices (nft_base_chain_netdev): every netdev hook, inet ingress. */
function onDevices(family: number, hook: number): boolean {
  return family === NETDEV || (family === INET && hook === INGRESS_INET);
}

/**
 * hookDevices reads the devices of a hook on devices (nft_chain_parse_netdev): NFTA_HOOK_DEV, else the names of
 * NFTA_HOOK_DEVS; none at all is a chain that waits for devices, which the kernel takes. Devices are kept by name
 * only: the kernel hooks names whether or not such a device exists.
 */
function hookDevices(h: AttrTable): string[] {
  const dev = h.get(NFTA_HOOK.DEV);
  if (dev) return [nameOf(dev)!];
  const devs = h.get(NFTA_HOOK.DEVS);
  if (!devs) return [];
  const names: string[] = [];
  for (const d of devs.children().all) {
    if (d.type !== NFTA_DEVICE_NAME) fail(E.EINVAL, d);
    names.push(nameOf(d)!);
  }
  return names;
}

function parseHook(family: number, attr: Attr, typeAttr: Attr | undefined): Hook {
  const h = attr.children().byType;
  const num = h.get(NFTA_HOOK.HOOKNUM);
  const prio = h.get(NFTA_HOOK.PRIORITY);
  if (!num || !prio) fail(E.EINVAL);
  const hook = be32(num);
  const priority = be32(prio) | 0;
  const type = typeAttr ? nameOf(typeAttr)! : 'filter';
  const types = CHAIN_TYPES[family];
  const mask = types?.[type];
  if (!types || !mask) fail(E.ENOENT, typeAttr);
  if (!mask.includes(hook)) fail(E.EOPNOTSUPP);
  if (type === 'nat' && priority <= PRI_CONNTRACK) fail(E.EOPNOTSUPP);
  if (onDevices(family, hook)) return { type, hook, priority, devices: hookDevices(h) };
  // A device for a hook that runs on none is refused, with no attribute named.
  if (h.has(NFTA_HOOK.DEV) || h.has(NFTA_HOOK.DEVS)) fail(E.EOPNOTSUPP);
  return { type, hook, priority };
}

/** lookupChain finds a chain of the table by name: ENOENT naming the attribute. */
export function lookupChain(table: TableObj, attr: Attr): ChainObj {
  return byName(table.chains, attr);
}

export function newChain(draft: Draft, req: Request): void {
  const a = req.attrs;
  const table = lookupTable(draft, req.family, a.get(NFTA_CHAIN.TABLE));
  const nameAttr = a.get(NFTA_CHAIN.NAME);
  const handleAttr = a.get(NFTA_CHAIN.HANDLE);
  let chain: ChainObj | undefined;
  if (handleAttr) {
    chain = byHandle(table.chains, handleAttr);
  } else if (nameAttr) {
    chain = table.chains.get(nameOf(nameAttr)!);
  }
  const hookAttr = a.get(NFTA_CHAIN.HOOK);
  const policyAttr = a.get(NFTA_CHAIN.POLICY);
  let policy: number | undefined;
  if (policyAttr) {
    if (chain && !chain.base) fail(E.EOPNOTSUPP, policyAttr);
    if (!chain && !hookAttr) fail(E.EOPNOTSUPP, policyAttr);
    policy = be32(policyAttr);
    if (policy !== 0 && policy !== 1) fail(E.EINVAL);
  }
  const flagsAttr = a.get(NFTA_CHAIN.FLAGS);
  if (flagsAttr && be32(flagsAttr) & ~NFT_CHAIN_FLAGS) fail(E.EOPNOTSUPP);
  if (chain) {
    if (req.msg.flags & NLM_F_EXCL) fail(E.EEXIST, nameAttr ?? handleAttr);
    if (req.msg.flags & NLM_F_REPLACE) fail(E.EOPNOTSUPP);
    if (hookAttr) {
      if (!chain.base) fail(E.EEXIST, hookAttr);
      const h = hookAttr.children().byType;
      const num = h.get(NFTA_HOOK.HOOKNUM);
      const prio = h.get(NFTA_HOOK.PRIORITY);
      if (!num || !prio) fail(E.EINVAL);
      // Moving a base chain to another hook or priority is an update the kernel does not make; the hook is
      // compared before the type is looked up (ENOENT when the family lacks it) and compared.
      if (be32(num) !== chain.base.hook || (be32(prio) | 0) !== chain.base.priority) fail(E.EOPNOTSUPP);
      const typeAttr = a.get(NFTA_CHAIN.TYPE);
      const type = typeAttr ? nameOf(typeAttr)! : 'filter';
      if (!CHAIN_TYPES[req.family]?.[type]) fail(E.ENOENT, typeAttr);
      if (type !== chain.base.type) fail(E.EEXIST, nameAttr ?? handleAttr);
    }
    // An update is a transaction of its own even when it changes nothing.
    const { chain: c } = draft.mutableChain(table, chain);
    if (policy !== undefined && c.base) c.base = { ...c.base, policy };
    draft.changed = true;
    return;
  }
  if (!nameAttr) fail(E.EINVAL);
  const name = nameOf(nameAttr)!;
  let base: ChainObj['base'];
  if (hookAttr) {
    const h = parseHook(req.family, hookAttr, a.get(NFTA_CHAIN.TYPE));
    base = { ...h, policy: policy ?? 1 };
  }
  const udata = udataOf(a.get(NFTA_CHAIN.USERDATA));
  const t = draft.mutableTable(table);
  const handle = t.nextHandle;
  t.nextHandle += 1n;
  t.chains.set(name, draft.fresh({ name, handle, base, udata, refs: 0, rules: [] }));
}

export function delChain(draft: Draft, req: Request): void {
  const { table, target: chain, bad } = deleteTarget(draft, req, NFTA_CHAIN, (t) => t.chains);
  // NLM_F_NONREC is refused before the attribute is looked at: no offset.
  if (req.msg.flags & NLM_F_NONREC && chain.rules.length + chain.refs > 0) fail(E.EBUSY);
  // The chain's own rules go with it; jumps from elsewhere keep it.
  if (chain.refs > 0) fail(E.EBUSY, bad);
  const { table: t, chain: c } = draft.mutableChain(table, chain);
  for (const r of c.rules) releaseRule(draft, t, r);
  c.rules = [];
  t.chains.delete(c.name);
  draft.changed = true;
}
