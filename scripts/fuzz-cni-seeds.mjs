// Seeds for the cni fuzz target (native/fuzz/cni_fuzz.cc), written each time scripts/fuzz.mjs runs: network configs
// as runtimes pass them and as they go wrong, each followed by the 0xFE split and an answer as the agent sends it
// (frames of u16 length and bytes), well-formed or broken as docs/cni-protocol.md lists.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const SPLIT = Buffer.from([0xfe]);

function frame(bytes) {
  const head = Buffer.alloc(2);
  head.writeUInt16LE(bytes.length);
  return Buffer.concat([head, bytes]);
}

function answerHeader({ magic = 'PNCA', version = 1, flags = 0, exit = 0, out = 0, err = 0 } = {}) {
  const b = Buffer.alloc(20);
  b.write(magic, 0, 'latin1');
  b.writeUInt16LE(version, 4);
  b.writeUInt16LE(flags, 6);
  b.writeUInt32LE(exit, 8);
  b.writeUInt32LE(out, 12);
  b.writeUInt32LE(err, 16);
  return b;
}

const CONFIGS = {
  chained: JSON.stringify({
    cniVersion: '1.0.0',
    name: 'k8s-pod-network',
    type: 'podnet-cni',
    socketPath: '/var/run/podnet/cni.sock',
    timeoutMs: 10000,
    prevResult: { cniVersion: '1.0.0', interfaces: [{ name: 'eth0', sandbox: '/var/run/netns/cni-1' }], ips: [{ address: '10.0.0.5/24', gateway: '10.0.0.1', interface: 0 }], routes: [], dns: {} },
  }),
  version: '{"cniVersion":"1.1.0"}',
  escapes: '{"cni\\u0056ersion":"1.0.\\u0030","socketPath":"\\/tmp\\/a b\\t\\"q\\".sock","timeoutMs":1e3,"x":"\\ud83d\\ude00\\udc00\\ud800"}',
  numbers: '{"timeoutMs":600000.0,"a":[-0,0.5e-3,1E+2,true,false,null,{}],"b":{"c":[[]]}}',
  utf8: '{"cniVersion":"é😀€","socketPath":"/run/ünï.sock"}',
  duplicate: '{"socketPath":1,"socketPath":"/s","timeoutMs":"9","timeoutMs":9}',
  trailingComma: '{"a":1,}',
  notObject: '[{"cniVersion":"1.0.0"}]',
  nested: `{"a":${'['.repeat(200)}${']'.repeat(200)}}`,
  whitespace: ' \t\r\n{ "cniVersion" : "0.4.0" } \n',
};

const ANSWERS = {
  none: [],
  result: [answerHeader({ out: 4, err: 3 }), Buffer.from('{}\n\n'), Buffer.from('log')],
  empty: [answerHeader({ exit: 255 })],
  chunked: [answerHeader({ out: 6 }), Buffer.from('abc'), Buffer.from('def')],
  badMagic: [answerHeader({ magic: 'PNCQ' })],
  tooLong: [answerHeader({ out: 1 }), Buffer.from('ab')],
  truncated: [answerHeader({ out: 9 }), Buffer.from('abc'), Buffer.alloc(0)],
  limits: [answerHeader({ exit: 256, out: 1048577, err: 65537 })],
};

/** writeCniSeeds replaces outDir/cni/ with every config paired with every answer; returns how many it wrote. */
export function writeCniSeeds(outDir) {
  const dir = join(outDir, 'cni');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  let count = 0;
  for (const [configName, config] of Object.entries(CONFIGS)) {
    for (const [answerName, messages] of Object.entries(ANSWERS)) {
      const bytes = Buffer.concat([Buffer.from(config), SPLIT, ...messages.map(frame)]);
      writeFileSync(join(dir, `${configName}-${answerName}`), bytes);
      count++;
    }
  }
  return count;
}
