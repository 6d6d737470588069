// The pod a process belongs to, from /proc/PID/cgroup texts of the shapes kubelets, runtimes and cgroup versions
// write (systemd and cgroupfs drivers, containerd, CRI-O and Docker, v1 and v2, nested under kind or a container),
// and the texts that name no pod (system services, user sessions, CRI-O's conmon, garbage, two pods at once). Also
// the start time from /proc/PID/stat, whose command name may hold spaces and parentheses.
import { describe, expect, it } from 'vitest';

import { podFromCgroup, type PodCgroup } from '../../lib/cni/pod-cgroup.js';
import { startTimeFromStat } from '../../lib/cni/proc-stat.js';

const UID = '0a1b2c3d-4e5f-6789-abcd-ef0123456789';
const UID_ = UID.replaceAll('-', '_');
const CID = 'f3e1d2c4b5a6978877665544332211009988aabbccddeeff0011223344556677';
const STATIC = '6b0e3a1f2c4d5e6f7a8b9c0d1e2f3a4b';

const v1 = (path: string): string =>
  [
    `12:pids:${path}`,
    `11:memory:${path}`,
    `10:cpu,cpuacct:${path}`,
    '9:rdma:/',
    `1:name=systemd:${path}`,
    '0::/',
    '',
  ].join('\n');
const v2 = (path: string): string => `0::${path}\n`;

describe('podFromCgroup', () => {
  const pods: { name: string; text: string; pod: PodCgroup }[] = [
    {
      name: 'systemd driver, containerd, burstable, cgroup v2',
      text: v2(`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID_}.slice/cri-containerd-${CID}.scope`),
      pod: { uid: UID, containerId: CID, runtime: 'containerd' },
    },
    {
      name: 'systemd driver, containerd, besteffort, cgroup v1',
      text: v1(`/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${UID_}.slice/cri-containerd-${CID}.scope`),
      pod: { uid: UID, containerId: CID, runtime: 'containerd' },
    },
    {
      name: 'systemd driver, guaranteed (no QoS level)',
      text: v2(`/kubepods.slice/kubepods-pod${UID_}.slice/cri-containerd-${CID}.scope`),
      pod: { uid: UID, containerId: CID, runtime: 'containerd' },
    },
    {
      name: 'systemd driver, CRI-O',
      text: v2(`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID_}.slice/crio-${CID}.scope`),
      pod: { uid: UID, containerId: CID, runtime: 'crio' },
    },
    {
      name: 'systemd driver, CRI-O with crun (a container level below the scope)',
      text: v2(`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID_}.slice/crio-${CID}.scope/container`),
      pod: { uid: UID, containerId: CID, runtime: 'crio' },
    },
    {
      name: 'systemd driver, Docker (cri-dockerd)',
      text: v1(`/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${UID_}.slice/docker-${CID}.scope`),
      pod: { uid: UID, containerId: CID, runtime: 'docker' },
    },
    {
      name: 'cgroupfs driver, burstable, cgroup v1',
      text: v1(`/kubepods/burstable/pod${UID}/${CID}`),
      pod: { uid: UID, containerId: CID, runtime: undefined },
    },
    {
      name: 'cgroupfs driver, guaranteed, cgroup v2',
      text: v2(`/kubepods/pod${UID}/${CID}`),
      pod: { uid: UID, containerId: CID, runtime: undefined },
    },
    {
      name: 'cgroupfs driver, besteffort',
      text: v1(`/kubepods/besteffort/pod${UID}/${CID}`),
      pod: { uid: UID, containerId: CID, runtime: undefined },
    },
    {
      name: 'kind: the kubelet under kubelet.slice',
      text: v2(
        `/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod${UID_}.slice/cri-containerd-${CID}.scope`,
      ),
      pod: { uid: UID, containerId: CID, runtime: 'containerd' },
    },
    {
      name: 'a node in a Docker container (cgroupfs below the container)',
      text: v1(`/docker/${CID}/kubepods/burstable/pod${UID}/${CID}`),
      pod: { uid: UID, containerId: CID, runtime: undefined },
    },
    {
      name: 'a static pod (32 hex digits)',
      text: v2(`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${STATIC}.slice/cri-containerd-${CID}.scope`),
      pod: { uid: STATIC, containerId: CID, runtime: 'containerd' },
    },
    {
      name: 'upper-case hex in the cgroup (lowercased)',
      text: v1(`/kubepods/burstable/pod${UID.toUpperCase()}/${CID}`),
      pod: { uid: UID, containerId: CID, runtime: undefined },
    },
    {
      name: 'a process in the pod cgroup itself (no container level)',
      text: v2(`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID_}.slice`),
      pod: { uid: UID, containerId: undefined, runtime: undefined },
    },
    {
      name: 'hybrid: only some controllers place it, others left at the root',
      text: [`12:pids:/kubepods/burstable/pod${UID}/${CID}`, '11:memory:/', '1:name=systemd:/system.slice/containerd.service', '0::/'].join('\n'),
      pod: { uid: UID, containerId: CID, runtime: undefined },
    },
    {
      name: 'no trailing newline, CRLF-free, a path holding a colon after the pod',
      text: `0::/kubepods/pod${UID}/${CID}:x`,
      pod: { uid: UID, containerId: undefined, runtime: undefined },
    },
  ];
  for (const { name, text, pod } of pods) {
    it(`finds the pod: ${name}`, () => {
      expect(podFromCgroup(text)).toEqual(pod);
    });
  }

  const none: { name: string; text: string }[] = [
    { name: 'a system service', text: v1('/system.slice/containerd.service') },
    { name: 'a user session', text: v2('/user.slice/user-1000.slice/session-3.scope') },
    { name: 'the root', text: v1('/') },
    { name: 'the kubepods root itself', text: v2('/kubepods.slice') },
    { name: 'a QoS level without a pod', text: v2('/kubepods.slice/kubepods-burstable.slice') },
    { name: 'a pod-like name outside kubepods', text: v2(`/system.slice/pod${UID}/${CID}`) },
    { name: "CRI-O's conmon in the pod slice", text: v2(`/kubepods.slice/kubepods-pod${UID_}.slice/crio-conmon-${CID}.scope`) },
    { name: 'a pod UID that is not one', text: v1('/kubepods/burstable/podnot-a-uid/abc') },
    { name: 'a truncated UID', text: v1(`/kubepods/burstable/pod${UID.slice(0, 20)}/${CID}`) },
    { name: 'systemd pod slice with dashes (not how systemd writes it)', text: v2(`/kubepods.slice/kubepods-pod${UID}.slice/x.scope`) },
    {
      name: 'two different pods on two lines',
      text: [`12:pids:/kubepods/pod${UID}/${CID}`, `11:memory:/kubepods/pod${STATIC}/${CID}`].join('\n'),
    },
    { name: 'empty text', text: '' },
    { name: 'garbage', text: 'hello\n\0\0\nkubepods pod\n:::\n' },
    { name: 'a relative path', text: `0::kubepods/pod${UID}/${CID}` },
    { name: 'a hierarchy id that is not a number', text: `x::/kubepods/pod${UID}/${CID}` },
    { name: 'a line without the path field', text: `0/kubepods/pod${UID}` },
  ];
  for (const { name, text } of none) {
    it(`finds no pod: ${name}`, () => {
      expect(podFromCgroup(text)).toBeUndefined();
    });
  }

  it('finds no pod in what is not a string', () => {
    expect(podFromCgroup(42 as unknown as string)).toBeUndefined();
  });
});

describe('startTimeFromStat', () => {
  const rest = (start: string): string => `S 1 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 ${start} 2166784 200 18446744073709551615`;
  const cases: { name: string; text: string; start: bigint | undefined }[] = [
    { name: 'a plain line', text: `4242 (sleep) ${rest('123456')}`, start: 123456n },
    { name: 'a name with spaces and parentheses', text: `7 (a) b (c) ) ${rest('99')}\n`, start: 99n },
    { name: 'a name that looks like fields', text: `8 (1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20) ${rest('5')}`, start: 5n },
    { name: 'the largest unsigned long long', text: `9 (x) ${rest('18446744073709551615')}`, start: 18446744073709551615n },
    { name: 'no closing parenthesis', text: `9 (x ${rest('5')}`, start: undefined },
    { name: 'too few fields', text: '9 (x) S 1 1 1', start: undefined },
    { name: 'a starttime that is not a number', text: `9 (x) ${rest('12a')}`, start: undefined },
    { name: 'a negative starttime', text: `9 (x) ${rest('-5')}`, start: undefined },
    { name: 'wider than unsigned long long', text: `9 (x) ${rest('18446744073709551616')}`, start: undefined },
    { name: 'empty', text: '', start: undefined },
  ];
  for (const { name, text, start } of cases) {
    it(`reads field 22: ${name}`, () => {
      expect(startTimeFromStat(text)).toBe(start);
    });
  }
});
