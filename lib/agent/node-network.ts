/**
 * NodeNetwork: what a node agent imports. It keeps the host's probe sets and SNAT rule, puts pods in and out of the
 * mesh (in-pod rules, policy routes, the proxy handoff, probe entries), rebuilds from a snapshot at start-up and
 * cleans up at shutdown. The order of the steps, their errors and events, the per-pod lock and the admission of pods
 * are kept here; the rules themselves go through one RuleBackend (iptables by default, or nftables with
 * `backend: 'nftables'`), and every client is injectable, so the same code runs on fakes (podnet/testing) and on the
 * kernel.
 */
import { EventEmitter } from 'node:events';
import { setImmediate as nextTurn } from 'node:timers/promises';

import { agentStepChannel } from '../diagnostics.js';
import { PodnetError, isNotFound } from '../errors.js';
import type { ZtunnelWorkload } from '../proxy/ztunnel-server.js';
import { checkArray, checkOptions, invalidType, invalidValue } from '../validate.js';
import type { Rtnetlink } from '../rtnetlink/client.js';
import { realIptables, realNetnsOpener, realNftables, realRtnetlink, type AgentNetns, type NetnsOpener, type RtnetlinkFactory } from './backends.js';
import { publishStep, retryable, settled } from './agent-steps.js';
import { AgentError, type AgentStep } from './errors.js';
import { IptablesBackend } from './iptables-backend.js';
import { KeyedLock } from './keyed-lock.js';
import { NftablesBackend } from './nftables-backend.js';
import type { NftProbeSet } from './nft-probe-set.js';
import type {
  NodeNetworkEvents,
  NodeNetworkOptions,
  NodeVerifyReport,
  PodInfo,
  PodProbeEntries,
  PodVerifyReport,
  SnapshotReport,
  WorkloadProxy,
} from './node-network-types.js';
import { checkNodeOptions } from './node-options.js';
import { preflightOf, type PreflightWiring } from './node-preflight.js';
import { PodAdmission } from './pod-admission.js';
import { checkPod, podProbeEntries } from './pod-info.js';
import { normalizeIp, type ProbeConflict, type ProbeOwnerMismatch, type ProbeOwnership } from './probe-ownership.js';
import type { ProbeSet } from './probe-set.js';
import type { PodRemoval, RuleBackend, RuleOptions, StepRunner } from './rule-backend.js';
import { type PodRoutingCreated, applyPodRouting, removePodRouting, routingFamilies, undoPodRouting, verifyPodRouting } from './routes.js';
import { toLogger, type Logger } from '../logger.js';

export type {
  NodeNetworkEvents,
  NodeNetworkOptions,
  NodeVerifyReport,
  PodInfo,
  PodVerifyReport,
  SnapshotReport,
  WorkloadProxy,
} from './node-network-types.js';

/**
 * NodeNetwork is what a node agent drives: it keeps the host's probe sets and SNAT rules (start, stop), puts pods in
 * and out of the mesh (addPod, removePod: in-pod rules, policy routes, the proxy handoff, probe entries), rebuilds
 * from a snapshot (syncSnapshot), and checks and repairs drift (verify, repair). Every failure of a step rejects with
 * AgentError naming the step and whether a retry can help; bad arguments throw InvalidArgumentError first. The
 * backends are injectable, so the same code runs on the fakes of podnet/testing (FakeNode) and on the kernel.
 */
export class NodeNetwork extends EventEmitter<NodeNetworkEvents> {
  readonly #options: RuleOptions;
  readonly #netns: NetnsOpener;
  readonly #rtnetlink: RtnetlinkFactory;
  /** The host's probe sets and SNAT rules and the pods' in-pod rules, on iptables or nftables. */
  readonly #rules: RuleBackend;
  readonly #proxy: WorkloadProxy | undefined;
  readonly #log: Logger;
  /** The preflight start() runs first, or undefined when it is skipped. */
  readonly #preflight: (() => Promise<Error | undefined>) | undefined;
  #probes: ProbeOwnership | undefined;
  #started = false;
  /** Calls for one pod (by uid) run in call order; calls for different pods run freely. */
  readonly #podCalls = new KeyedLock();
  /** addPod and removePod run a few pods at a time, in call order (see PodAdmission). */
  readonly #admission: PodAdmission;
  /** The pods addPod enrolled (or a snapshot named): the namespace they were enrolled in and their IPs. */
  readonly #enrolled = new Map<string, { netnsId: string | undefined; ips: readonly string[] }>();

  /**
   * constructor checks the options and throws InvalidArgumentError naming a bad one (`options.<name>`). wiring turns
   * the `preflight` option's true or settings into the check start() runs first (the package's NodeNetwork passes
   * checkNode's); without it only a preflight function is run.
   */
  constructor(options: NodeNetworkOptions = {}, wiring?: PreflightWiring) {
    super();
    const { o, checked } = checkNodeOptions(options);
    this.#options = checked.rules;
    this.#netns = o.netns ?? realNetnsOpener;
    this.#rtnetlink = o.rtnetlink ?? realRtnetlink;
    this.#admission = new PodAdmission(checked.maxPodsInFlight);
    this.#proxy = checked.proxy;
    this.#log = toLogger(o.logger);
    const { backend, hostProcRoot, onConflict } = checked;
    this.#preflight = preflightOf(o.preflight, checked.usesFakes, { backend, ipv6: checked.rules.ipv6, hostProcRoot }, wiring);
    const rules = checked.rules;
    const probes = {
      onConflict,
      logger: this.#log,
      onConflictEvent: (c: ProbeConflict) => this.emit('conflict', c),
      onOwnerMismatch: (m: ProbeOwnerMismatch) => this.emit('ownerMismatch', m),
    };
    this.#rules =
      backend === 'nftables'
        ? new NftablesBackend({ rules, probes, nftables: o.nftables ?? realNftables(o.hostNetns), kubeletUid: o.kubeletUid, procRoot: hostProcRoot })
        : new IptablesBackend({ rules, probes, ipset: o.ipset, hostNetns: o.hostNetns, iptables: o.iptables ?? realIptables(o.hostNetns) });
  }

  /** backend is which rules the node gets: 'iptables' or 'nftables'. */
  get backend(): 'iptables' | 'nftables' {
    return this.#rules.name;
  }

  /** probeSet is the host's ProbeSet (an NftProbeSet with the nftables backend) once start() ran. */
  get probeSet(): ProbeSet | NftProbeSet | undefined {
    return this.#probes as ProbeSet | NftProbeSet | undefined;
  }

  async #step<T>(step: AgentStep, pod: string | undefined, what: string, fn: () => Promise<T>): Promise<T> {
    const start = agentStepChannel.hasSubscribers ? performance.now() : -1;
    let result: T;
    try {
      result = await fn();
    } catch (err) {
      const failed = err instanceof AgentError ? err : this.#stepError(step, pod, what, err);
      if (start >= 0) publishStep(step, pod, what, start, failed);
      throw failed;
    }
    if (start >= 0) publishStep(step, pod, what, start);
    return result;
  }

  #stepError(step: AgentStep, pod: string | undefined, what: string, err: unknown): AgentError {
    const message = `${what} failed: ${(err as Error)?.message ?? String(err)}`;
    this.#log.error(message, { step, ...(pod === undefined ? {} : { pod }) });
    return new AgentError(step, message, { cause: err, retryable: retryable(err), ...(pod === undefined ? {} : { pod }) });
  }

  /** #steps runs a backend's steps as this NodeNetwork's, for pod (or the node). */
  #steps(pod?: string): StepRunner {
    return (step, what, fn) => this.#step(step, pod, what, fn);
  }

  #live(): ProbeOwnership {
    if (!this.#probes || !this.#started) throw new PodnetError('node network is not started', 'ERR_AGENT_NOT_STARTED');
    return this.#probes;
  }

  /**
   * start creates the probe sets (an existing identical set is fine), loads their owners, and installs the host
   * SNAT rules (deleted, then created). With the nftables backend and no `kubeletUid` it first detects the kubelet's
   * uid under `hostProcRoot`. Rejects with AgentError: step 'kubelet-uid' (its cause a KubeletUidError; retryable
   * when no kubelet runs yet), 'sets' or 'host-rules'. Before all that it runs the preflight (see the `preflight`
   * option) and rejects with AgentError step 'preflight' (`ERR_AGENT_PREFLIGHT`, not retryable, its cause the
   * preflight's error, a PreflightError with checkNode) when the node lacks a feature, having changed nothing.
   */
  async start(): Promise<void> {
    if (this.#started) return;
    const preflight = this.#preflight;
    if (preflight) {
      await this.#step('preflight', undefined, 'checking what the node offers', async () => {
        const missing = await preflight();
        if (missing === undefined) return;
        this.#log.error(missing.message, { step: 'preflight' });
        // A node that lacks a module or a program does not grow one by retrying.
        throw new AgentError('preflight', `checking what the node offers failed: ${missing.message}`, { cause: missing, retryable: false });
      });
    }
    const probes = await this.#rules.open(this.#steps());
    await this.#step('sets', undefined, 'creating the probe sets', async () => {
      await probes.ensure();
      await probes.load();
    });
    this.#probes = probes;
    await this.#step('host-rules', undefined, 'installing the host SNAT rules', () => this.#rules.start());
    this.#started = true;
    this.#log.info('node network started', { set: probes.v4Name, ...this.#backendField() });
  }

  /** The backend as a log field, for nftables only (iptables is the default). */
  #backendField(): { backend?: 'nftables' } {
    return this.#rules.name === 'nftables' ? { backend: 'nftables' } : {};
  }

  #openPodNetns(pod: PodInfo): AgentNetns {
    if (pod.netns === undefined) throw invalidValue('pod.netns', "the pod's namespace", pod.netns);
    return this.#netns.open(pod.netns);
  }

  /** Opens the pod's namespace for fn and closes it after, also when fn fails. */
  async #withPod<T>(pod: PodInfo, fn: (ns: AgentNetns) => Promise<T>): Promise<T> {
    const ns = await this.#step('netns', pod.uid, `opening the namespace of pod '${pod.uid}'`, async () => this.#openPodNetns(pod));
    try {
      return await fn(ns);
    } finally {
      ns.close();
    }
  }

  /** Runs fn, a call of the backend on the pod's in-pod rules, in the 'inpod-rules' step. */
  async #inpodRules<T>(pod: PodInfo, fn: () => Promise<T>): Promise<T> {
    return this.#step('inpod-rules', pod.uid, `in-pod rules of pod '${pod.uid}'`, fn);
  }

  async #podRouting<T>(pod: PodInfo, ns: AgentNetns, fn: (rt: Rtnetlink, families: (4 | 6)[]) => Promise<T>): Promise<T> {
    return this.#step('routes', pod.uid, `policy routes of pod '${pod.uid}'`, async () => {
      const rt = await this.#rtnetlink({ netns: ns });
      try {
        return await fn(rt, await routingFamilies(rt, this.#options.ipv6));
      } finally {
        rt.close();
      }
    });
  }

  /** Takes out the policy routing an addPod created, when its rules were refused; a failure is logged, not thrown. */
  async #undoRouting(p: PodInfo, ns: AgentNetns, created: PodRoutingCreated[]): Promise<void> {
    if (!created.some((c) => c.rule || c.route)) return;
    try {
      const rt = await this.#rtnetlink({ netns: ns });
      try {
        await undoPodRouting(rt, created);
      } finally {
        rt.close();
      }
    } catch (err) {
      this.#log.warn(`pod '${p.uid}': the policy routing added beside its refused rules could not be taken out`, { pod: p.uid, error: String(err) });
    }
  }

  /** Takes a pod back from the proxy after its enrollment failed elsewhere; a failure is logged, not thrown. */
  async #undoProxy(p: PodInfo, proxy: WorkloadProxy): Promise<void> {
    try {
      await proxy.delWorkload(p.uid);
    } catch (err) {
      this.#log.warn(`pod '${p.uid}': the node proxy could not be told to drop it after its enrollment failed`, { pod: p.uid, error: String(err) });
    }
  }

  /**
   * addPod applies the in-pod rules and the policy routes (the fwmark rule and the local route of table 100) inside
   * the pod's namespace and hands the namespace to the node proxy (with the `proxy` option; waits for its ack), the
   * three side by side (with the iptables backend, the restore process starts a loop turn before the other two), and
   * adds its IPs to the probe sets last, once all three are done, so a pod is never probed through SNAT before its
   * rules exist and never starts without its proxy listeners. Idempotent: a second addPod changes nothing. Rejects
   * with AgentError naming the failed step ('netns', 'inpod-rules', 'routes', 'proxy', 'probe-set'; the first of the
   * three in that order when several fail); a failed 'proxy' step is retryable (no proxy connected yet, the proxy
   * refused) and a retry leaves no duplicate. A failed call takes back what it put in beside the failure: the routing
   * it created when the rules are refused, and the proxy's copy of a pod this NodeNetwork did not hold before.
   */
  async addPod(pod: PodInfo): Promise<void> {
    const p = checkPod(pod, 'pod', this.#proxy !== undefined);
    this.#live();
    // Admitted whole: the host's nf_tables client runs one request at a time, so pods let out of the bound before
    // their probe entry would pile up there and finish with the last again.
    return this.#podCalls.run(p.uid, () => this.#admission.run(() => this.#addPod(p)));
  }

  async #addPod(p: PodInfo): Promise<void> {
    const probes = this.#live();
    const before = this.#enrolled.get(p.uid);
    let netnsId: string | undefined;
    await this.#withPod(p, async (ns) => {
      netnsId = ns.id;
      if (before?.netnsId !== undefined && before.netnsId !== ns.id) {
        // The runtime recreated the sandbox: the rules and the proxy's listeners go into the new namespace.
        this.#log.warn(`pod '${p.uid}' has a new namespace; enrolling it again`, { pod: p.uid, netns: ns.path });
      }
      // The rules and the routing go into the pod's own namespace and neither needs the other there (the rule
      // matches the mark the rules set; the pod sends nothing before it starts), and the proxy's listeners need
      // neither: all three go in together. A call that fails leaves the pod as it was: what the routing created
      // beside refused rules is taken out, and a pod this agent did not hold before is taken back from the proxy.
      const proxy = this.#proxy;
      // When the rules take far longer than the other two (a restore process), their request leaves first: the
      // routing's and the proxy's synchronous starts, run before it, delayed the process by 0.35-0.4 ms. One turn
      // of the loop lets it start; the other two follow it.
      const applied = this.#inpodRules(p, () => this.#rules.applyPod(p, ns));
      if (this.#rules.podRulesLead) {
        applied.catch(() => {}); // settled below, after the turn
        await nextTurn();
      }
      const [rules, routing, handed] = await Promise.allSettled([
        applied,
        this.#podRouting(p, ns, (rt, families) => applyPodRouting(rt, families)),
        proxy && this.#step('proxy', p.uid, `handing pod '${p.uid}' to the node proxy`, async () => {
          if (ns.fd === undefined) throw invalidValue('pod.netns', 'a namespace with an fd for the node proxy', ns.path);
          // The agent's own handle when it has one: the server then duplicates it without identifying it again.
          await proxy.addWorkload(p.uid, p.workload!, ns.handle ?? { fd: ns.fd });
        }),
      ]);
      const failed = [rules, routing, handed].find((r) => r.status === 'rejected');
      if (failed === undefined) return;
      if (rules.status === 'rejected' && routing.status === 'fulfilled') await this.#undoRouting(p, ns, routing.value);
      if (proxy && handed.status === 'fulfilled' && before === undefined) await this.#undoProxy(p, proxy);
      throw failed.reason;
    });
    await this.#step('probe-set', p.uid, `adding the probe entries of pod '${p.uid}'`, async () => {
      for (const ip of p.ips) await probes.add(ip, p.uid);
      // Addresses the pod held before and holds no more (a recreated sandbox may get others) are let go.
      const now = new Set(p.ips.map((ip) => normalizeIp(ip).ip));
      for (const ip of before?.ips ?? []) if (!now.has(normalizeIp(ip).ip)) await probes.remove(ip, p.uid);
    });
    this.#enrolled.set(p.uid, { netnsId, ips: p.ips });
    this.#log.info('pod added', { pod: p.uid, ips: p.ips });
  }

  /**
   * removePod removes the pod's probe entries first (only those it owns), then tells the node proxy to drop it (with
   * the `proxy` option), then removes its in-pod rules and policy routes, unless the pod is being deleted (its
   * namespace is going away with them). With the nftables backend it resolves once the kernel has also let go of
   * the pod's nf_tables socket (an RCU grace period after the deletion), without holding one of the `maxPodsInFlight`
   * places meanwhile. Rejects with AgentError ('probe-set', 'proxy', 'netns', 'inpod-rules', 'routes').
   */
  async removePod(pod: PodInfo, options: { deleted?: boolean } = {}): Promise<void> {
    const p = checkPod(pod);
    const o = checkOptions<{ deleted?: boolean }>('options', options);
    if (o.deleted !== undefined && typeof o.deleted !== 'boolean') throw invalidType('options.deleted', 'a boolean', o.deleted);
    this.#live();
    return this.#podCalls.run(p.uid, async () => {
      const removal: PodRemoval = {};
      try {
        await this.#admission.run(() => this.#removePod(p, o.deleted === true, removal));
      } finally {
        // The kernel's release of what the rules' removal used is waited for in the pod's own turn, also when a
        // later step failed, so that the pod's next call finds its namespace free; but not in a place among the
        // pods in flight, so that the other pods' removals go on meanwhile.
        await removal.released?.();
      }
    });
  }

  /** Removes the pod; removal gets what the rules' removal leaves to wait for, as soon as it is known. */
  async #removePod(p: PodInfo, deleted: boolean, removal: PodRemoval): Promise<void> {
    const probes = this.#live();
    await this.#step('probe-set', p.uid, `removing the probe entries of pod '${p.uid}'`, async () => {
      for (const ip of p.ips) await probes.remove(ip, p.uid);
    });
    const proxy = this.#proxy;
    if (proxy) {
      await this.#step('proxy', p.uid, `removing pod '${p.uid}' from the node proxy`, () => proxy.delWorkload(p.uid));
    }
    // From here on the pod is out of the proxy and the probe set: it is no longer enrolled, whatever its namespace says.
    this.#enrolled.delete(p.uid);
    if (!deleted) {
      await this.#withPod(p, async (ns) => {
        removal.released = (await this.#inpodRules(p, () => this.#rules.removePod(p, ns))).released;
        await this.#podRouting(p, ns, (rt, families) => removePodRouting(rt, families));
      });
    }
    this.#log.info('pod removed', { pod: p.uid, deleted });
  }

  /**
   * syncSnapshot makes the probe sets hold the snapshot's pods: every pod's IPs are upserted, then entries whose IP
   * no pod claims are pruned from what the sets hold (also entries whose add timed out, unknown to the agent), but
   * never while any pod has no IP yet (it may be about to claim one of them). With `reapplyRules`, the in-pod rules
   * and policy routes of every pod with a namespace are reconciled first. With the `proxy` option, the snapshot's pods
   * become what a (re)connecting proxy is sent (each with its namespace, or as a Keep when it has none or it is gone),
   * before any probe entry changes. A pod that fails does not fail the snapshot: every other pod is done, every write
   * has settled, and the report lists each failed pod (`failed`); a pod whose rules failed gets no probe entry.
   * Throws InvalidArgumentError for a bad pod, PodnetError `ERR_AGENT_NOT_STARTED` before start(); rejects with
   * AgentError ('proxy', or 'probe-set' when pruning fails).
   */
  async syncSnapshot(pods: readonly PodInfo[], options: { reapplyRules?: boolean } = {}): Promise<SnapshotReport> {
    const list = checkArray('pods', pods, 'an array of pods', (pod, at) => checkPod(pod, at, this.#proxy !== undefined));
    const o = checkOptions<{ reapplyRules?: boolean }>('options', options);
    if (o.reapplyRules !== undefined && typeof o.reapplyRules !== 'boolean') throw invalidType('options.reapplyRules', 'a boolean', o.reapplyRules);
    const probes = this.#live();
    const report: SnapshotReport = { added: 0, unchanged: 0, takenOver: 0, pruned: [], pruneSkipped: false, rulesReapplied: 0, failed: [] };
    const failedUids = new Set<string>();
    const fail = (uid: string, err: unknown, step: AgentStep, what: string) => {
      const error = err instanceof AgentError ? err : this.#stepError(step, uid, what, err);
      report.failed.push({ uid, step: error.step, error });
      failedUids.add(uid);
    };
    // The snapshot's pods are the enrolled ones now; the namespace they were enrolled in is known once one opens.
    for (const pod of list) this.#enrolled.set(pod.uid, { netnsId: this.#enrolled.get(pod.uid)?.netnsId, ips: pod.ips });
    if (o.reapplyRules) {
      for (const pod of list) {
        if (pod.netns === undefined) continue;
        try {
          await this.#podCalls.run(pod.uid, () => this.#reapplyPod(pod));
          report.rulesReapplied++;
        } catch (err) {
          fail(pod.uid, err, 'inpod-rules', `re-applying the rules of pod '${pod.uid}'`);
        }
      }
    }
    if (this.#proxy) await this.#replaceProxyWorkloads(this.#proxy, list);
    // Every pod's adds run at once and all settle before the report: none is still writing when it is read.
    const upserts = list
      .filter((pod) => !failedUids.has(pod.uid))
      .map(async (pod) => {
        const what = `adding the probe entries of pod '${pod.uid}'`;
        try {
          const outcomes = await this.#step('probe-set', pod.uid, what, () => settled(pod.ips.map((ip) => probes.add(ip, pod.uid))));
          for (const outcome of outcomes) {
            if (outcome === 'added') report.added++;
            else if (outcome === 'unchanged') report.unchanged++;
            else report.takenOver++;
          }
        } catch (err) {
          fail(pod.uid, err, 'probe-set', what);
        }
      });
    await Promise.all(upserts);
    // Failures land in completion order; the report lists them in snapshot order.
    const order = new Map(list.map((pod, i) => [pod.uid, i]));
    report.failed.sort((a, b) => order.get(a.uid)! - order.get(b.uid)!);
    if (report.failed.length > 0) {
      this.#log.warn('snapshot synced with failed pods', { pods: report.failed.map((f) => f.uid), steps: report.failed.map((f) => f.step) });
    }
    const waiting = list.filter((pod) => pod.ips.length === 0);
    if (waiting.length > 0) {
      report.pruneSkipped = true;
      this.#log.warn('not pruning probe sets: some pods have no IP yet', { pods: waiting.map((p) => p.uid) });
      return report;
    }
    const claimed = new Set(list.flatMap((pod) => pod.ips.map((ip) => normalizeIp(ip).ip)));
    report.pruned = await this.#step('probe-set', undefined, 'pruning the probe sets', () => probes.prune(claimed));
    return report;
  }

  /**
   * verify checks that the probe sets exist as created and the host rules are intact, and for each pod given in
   * `pods` (with a namespace) its in-pod rules, policy routes and probe entries (read from the probe sets: each of
   * its IPs present and owned by it); it changes nothing on the node. Rejects with AgentError when a pod's namespace
   * cannot be opened or read, or the probe sets cannot be listed ('probe-set').
   */
  async verify(options: { pods?: readonly PodInfo[] } = {}): Promise<NodeVerifyReport> {
    return this.#verify(this.#podsOption(options));
  }

  async #verify(pods: readonly PodInfo[]): Promise<NodeVerifyReport> {
    const probes = this.#live();
    const host = await this.#rules.verify();
    const podReports = await this.#verifyPods(pods, probes);
    const inSync = host.sets.every((s) => s.ok) && host.hostRules.every((h) => h.result.inSync) && podReports.every((p) => p.inSync);
    return { inSync, ...host, pods: podReports };
  }

  /** The pods of verify's and repair's options, checked; those without a namespace have nothing to verify. */
  #podsOption(options: unknown): PodInfo[] {
    const pods = checkOptions<{ pods?: readonly PodInfo[] }>('options', options).pods;
    if (pods === undefined) return [];
    return checkArray('options.pods', pods, 'an array of pods', (pod, at) => checkPod(pod, at)).filter((p) => p.netns !== undefined);
  }

  /** Gives the proxy the snapshot's pods, each with its namespace if it still opens (the proxy keeps its own). */
  async #replaceProxyWorkloads(proxy: WorkloadProxy, pods: readonly PodInfo[]): Promise<void> {
    const opened: AgentNetns[] = [];
    try {
      const workloads: ZtunnelWorkload[] = pods.map((pod) => {
        let ns: AgentNetns | undefined;
        if (pod.netns !== undefined) {
          try {
            ns = this.#netns.open(pod.netns);
            opened.push(ns);
          } catch (err) {
            this.#log.warn(`pod '${pod.uid}' namespace did not open; the proxy is told to keep it: ${(err as Error).message}`, { pod: pod.uid });
          }
        }
        return { uid: pod.uid, workload: pod.workload!, ...(ns?.fd === undefined ? {} : { netns: { fd: ns.fd } }) };
      });
      await this.#step('proxy', undefined, 'replacing the node proxy snapshot', async () => proxy.replaceWorkloads(workloads));
    } finally {
      for (const ns of opened) ns.close();
    }
  }

  /** Reconciles a pod's in-pod rules and puts back its policy routes (syncSnapshot's reapply, repair). */
  async #reapplyPod(pod: PodInfo): Promise<void> {
    await this.#withPod(pod, async (ns) => {
      const known = this.#enrolled.get(pod.uid);
      if (known !== undefined && known.netnsId === undefined) known.netnsId = ns.id;
      await this.#inpodRules(pod, () => this.#rules.repairPod(pod, ns));
      await this.#podRouting(pod, ns, (rt, families) => applyPodRouting(rt, families));
    });
  }

  /** Verifies each pod, its probe entries against one listing of the probe sets. */
  async #verifyPods(pods: readonly PodInfo[], probes: ProbeOwnership): Promise<PodVerifyReport[]> {
    if (pods.length === 0) return [];
    const held = await this.#step('probe-set', undefined, 'listing the probe sets', async () => {
      try {
        return new Map((await probes.held()).map((e) => [e.ip, e.owner]));
      } catch (err) {
        // A missing set is reported in `sets`; for the pods it holds no entry.
        if (isNotFound(err)) return new Map<string, string>();
        throw err;
      }
    });
    const reports: PodVerifyReport[] = [];
    for (const pod of pods) {
      const probeEntries = podProbeEntries(pod, held);
      const found = await this.#verifyPod(pod, probeEntries);
      const entriesOk = probeEntries.missing.length === 0 && probeEntries.foreign.length === 0;
      reports.push({ ...found, inSync: found.inSync && entriesOk });
    }
    return reports;
  }

  async #verifyPod(pod: PodInfo, probeEntries: PodProbeEntries): Promise<PodVerifyReport> {
    let ns: AgentNetns;
    try {
      ns = this.#openPodNetns(pod);
    } catch (err) {
      // A namespace that is gone is a finding about the pod, not a failure to verify it.
      if (!isNotFound(err)) throw this.#stepError('netns', pod.uid, `opening the namespace of pod '${pod.uid}'`, err);
      return { uid: pod.uid, inSync: false, netns: 'gone', rules: [], routes: [], probeEntries };
    }
    try {
      const enrolledIn = this.#enrolled.get(pod.uid)?.netnsId;
      const netns = enrolledIn !== undefined && enrolledIn !== ns.id ? 'replaced' : 'ok';
      const found = await this.#inpodRules(pod, () => this.#rules.verifyPod(pod, ns));
      const routes = await this.#podRouting(pod, ns, (rt, families) => verifyPodRouting(rt, families));
      const inSync = netns === 'ok' && found.rules.every((r) => r.result.inSync) && routes.every((r) => r.rule && r.route);
      return { uid: pod.uid, inSync, netns, ...found, routes, probeEntries };
    } finally {
      ns.close();
    }
  }

  /**
   * repair recreates missing probe sets, re-applies drifted host rules, and for each pod in `pods` that drifted
   * re-applies its in-pod rules and policy routes, then puts back its missing and foreign probe entries (a foreign one
   * by the `onConflict` policy: taken over, or refused with 'error'); resolves whether anything changed. A pod whose
   * namespace is gone gets no probe entry (none exists without its rules). Rejects with AgentError.
   */
  async repair(options: { pods?: readonly PodInfo[] } = {}): Promise<{ changed: boolean }> {
    const pods = this.#podsOption(options);
    const report = await this.#verify(pods);
    if (report.inSync) return { changed: false };
    const probes = this.#live();
    if (report.sets.some((s) => !s.present)) {
      await this.#step('sets', undefined, 'recreating the probe sets', async () => {
        await probes.ensure();
        await probes.load();
      });
    }
    const hostInSync = report.hostRules.every((h) => h.result.inSync);
    if (!report.sets.every((s) => s.ok) || !hostInSync) {
      await this.#step('host-rules', undefined, 'repairing the host rules', () => this.#rules.repair());
    }
    // report.pods is in the order of pods: the drifted ones are found by position, not by uid. A pod whose
    // namespace is gone has nothing to repair; one whose namespace was replaced is enrolled again, as addPod would.
    const drifted: PodInfo[] = [];
    for (const [i, pod] of pods.entries()) {
      const found = report.pods[i]!;
      if (found.inSync) continue;
      if (found.netns === 'gone') {
        this.#log.warn(`pod '${pod.uid}' namespace is gone; nothing to repair`, { pod: pod.uid });
        continue;
      }
      drifted.push(pod);
      const reenroll = found.netns === 'replaced' && (this.#proxy === undefined || pod.workload !== undefined);
      const lost = [...found.probeEntries.missing, ...found.probeEntries.foreign.map((f) => f.ip)];
      await this.#podCalls.run(pod.uid, async () => {
        if (reenroll) return this.#addPod(pod);
        await this.#reapplyPod(pod);
        if (lost.length === 0) return;
        await this.#step('probe-set', pod.uid, `putting back the probe entries of pod '${pod.uid}'`, async () => {
          await settled(lost.map((ip) => probes.add(ip, pod.uid)));
        });
      });
    }
    this.#log.warn('node network repaired drift', {
      sets: report.sets.filter((s) => !s.ok).map((s) => s.name),
      pods: drifted.map((p) => p.uid),
    });
    return { changed: true };
  }

  /**
   * stop deletes the host rules, then flushes and destroys the probe sets, unless `keep` (an upgrade: the next agent
   * takes them over). Rejects with AgentError (step 'host-rules' or 'sets').
   */
  async stop(options: { keep?: boolean } = {}): Promise<void> {
    const o = checkOptions<{ keep?: boolean }>('options', options);
    if (!this.#started) return;
    this.#started = false;
    await this.#rules.stop(this.#steps(), o.keep === true);
    this.#log.info('node network stopped', { keep: o.keep === true, ...this.#backendField() });
  }
}
