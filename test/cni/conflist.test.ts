// The pure config transformations: which file is primary (libcni's order), podnet's entry chained and unchained in
// the text itself (every other byte kept), a .conf turned into a conflist and recognised again.
import { describe, expect, it } from 'vitest';

import {
  chainPodnet,
  compareConfigNames,
  configFileKind,
  conflistFromConf,
  conflistNameFor,
  conflistRevertsToConf,
  primaryConfigName,
  unchainPodnet,
  type PodnetConfEntry,
} from '../../lib/cni/conflist.js';
import { CniInstallError } from '../../lib/cni/install-errors.js';

const entry: PodnetConfEntry = { type: 'podnet-cni', socketPath: '/var/run/podnet/cni.sock', timeoutMs: 10000 };

const calico = `{
  "name": "k8s-pod-network",
  "cniVersion": "0.3.1",
  "plugins": [
    {
      "type": "calico",
      "mtu": 1440,
      "ipam": { "type": "calico-ipam" }
    },
    {
      "type": "portmap",
      "snat": true,
      "capabilities": {"portMappings": true}
    }
  ],
  "zz": 1.50,
  "big": 123456789012345678901234567890
}
`;

function thrown(fn: () => unknown): CniInstallError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CniInstallError);
    return err as CniInstallError;
  }
  throw new Error('expected a CniInstallError');
}

function plugins(text: string): unknown[] {
  return (JSON.parse(text) as { plugins: unknown[] }).plugins;
}

describe('config file selection', () => {
  it.each([
    ['10-calico.conflist', 'conflist'],
    ['10-bridge.conf', 'conf'],
    ['99-loopback.json', 'conf'],
    ['.conf', 'conf'],
    ['10-bridge.conf.bak', undefined],
    ['README', undefined],
    ['notes.yaml', undefined],
    ['x.CONF', undefined],
  ])('%s is read as %s', (name, kind) => {
    expect(configFileKind(name)).toBe(kind);
  });

  it('picks the lexically first .conflist, .conf or .json, ignoring other files', () => {
    expect(primaryConfigName(['20-a.conf', '10-b.json', '10-b.conflist', '05-notes.txt', '07-x.conf.bak'])).toBe('10-b.conflist');
    expect(primaryConfigName(['30-z.conflist', '11-y.json', '12-x.conf'])).toBe('11-y.json');
    expect(primaryConfigName(['README', 'x.yaml'])).toBeUndefined();
    expect(primaryConfigName([])).toBeUndefined();
  });

  it('orders names by UTF-8 bytes as Go does, not by UTF-16 units', () => {
    // U+FF01 is EF BC 81 in UTF-8, U+1F600 is F0 9F 98 80: Go sorts U+FF01 first; UTF-16 (D83D < FF01) would not.
    const names = ['\u{1F600}.conf', '\uFF01.conf'];
    expect(primaryConfigName(names)).toBe('\uFF01.conf');
    expect([...names].sort()[0]).toBe('\u{1F600}.conf');
    expect(compareConfigNames('Z.conf', 'a.conf')).toBeLessThan(0);
  });

  it('names the conflist a single-plugin config becomes', () => {
    expect(conflistNameFor('10-bridge.conf')).toBe('10-bridge.conflist');
    expect(conflistNameFor('10-net.v2.json')).toBe('10-net.v2.conflist');
  });
});

describe('chainPodnet', () => {
  it('appends the entry after the last plugin and keeps every other byte', () => {
    const { text, changed } = chainPodnet(calico, entry, '/x/10-calico.conflist');
    expect(changed).toBe(true);
    const cut = calico.indexOf('}\n  ],') + 1;
    expect(text.startsWith(calico.slice(0, cut))).toBe(true);
    expect(text.endsWith(calico.slice(cut))).toBe(true);
    expect(plugins(text)).toEqual([...plugins(calico), entry]);
    expect(text).toContain('"zz": 1.50');
    expect(text).toContain('123456789012345678901234567890');
    expect(text.slice(cut)).toMatch(/^,\n {4}\{\n {6}"type": "podnet-cni",\n {6}"socketPath"/);
  });

  it('changes nothing when the same entry is there (idempotent)', () => {
    const once = chainPodnet(calico, entry, 'f').text;
    const twice = chainPodnet(once, entry, 'f');
    expect(twice).toEqual({ text: once, changed: false });
  });

  it('updates an entry with other options where it stands', () => {
    const middle = calico.replace('    {\n      "type": "portmap"', '    {"type": "podnet-cni", "timeoutMs": 5, "extra": true},\n    {\n      "type": "portmap"');
    const { text, changed } = chainPodnet(middle, entry, 'f');
    expect(changed).toBe(true);
    const list = plugins(text) as { type: string }[];
    expect(list.map((p) => p.type)).toEqual(['calico', 'podnet-cni', 'portmap']);
    expect(list[1]).toEqual(entry);
    expect(text.slice(text.indexOf('"portmap"'))).toBe(calico.slice(calico.indexOf('"portmap"')));
  });

  it('keeps one entry when podnet appears more than once', () => {
    const dup = chainPodnet(calico, entry, 'f').text.replace('"type": "portmap"', '"type": "podnet-cni"');
    const list = plugins(chainPodnet(dup, entry, 'f').text) as { type: string }[];
    expect(list.map((p) => p.type)).toEqual(['calico', 'podnet-cni']);
  });

  it.each([
    ['compact', '{"name":"n","plugins":[{"type":"bridge"}]}', '{"name":"n","plugins":[{"type":"bridge"}, {"type": "podnet-cni", "socketPath": "/var/run/podnet/cni.sock", "timeoutMs": 10000}]}'],
    ['tab-indented', '{\n\t"name": "n",\n\t"plugins": [\n\t\t{"type": "bridge"}\n\t]\n}\n', '{\n\t"name": "n",\n\t"plugins": [\n\t\t{"type": "bridge"},\n\t\t{\n\t\t\t"type": "podnet-cni",\n\t\t\t"socketPath": "/var/run/podnet/cni.sock",\n\t\t\t"timeoutMs": 10000\n\t\t}\n\t]\n}\n'],
  ])('writes the entry in the file\'s own layout (%s)', (_name, input, expected) => {
    expect(chainPodnet(input, entry, 'f').text).toBe(expected);
  });

  it('keeps key order, integer-like keys and strings with brackets as written', () => {
    const odd = '{"b": 1, "10": "]}[{,\\"", "plugins": [{"type": "x", "s": "a]b"}], "a": 2}';
    const { text } = chainPodnet(odd, entry, 'f');
    expect(text.startsWith('{"b": 1, "10": "]}[{,\\"", "plugins": [{"type": "x", "s": "a]b"}, ')).toBe(true);
    expect(text.endsWith('], "a": 2}')).toBe(true);
  });

  it.each([
    ['broken JSON', '{"plugins": [', 'ERR_CNI_CONFIG_PARSE'],
    ['trailing garbage', '{"plugins": [{"type":"x"}]} x', 'ERR_CNI_CONFIG_PARSE'],
    ['an array', '[{"type": "x"}]', 'ERR_CNI_CONFIG_INVALID'],
    ['no plugins', '{"name": "n"}', 'ERR_CNI_CONFIG_INVALID'],
    ['plugins not a list', '{"name": "n", "plugins": {"type": "x"}}', 'ERR_CNI_CONFIG_INVALID'],
    ['an empty list', '{"name": "n", "plugins": []}', 'ERR_CNI_CONFIG_INVALID'],
  ])('refuses %s with a typed error naming the file', (_name, input, code) => {
    const err = thrown(() => chainPodnet(input, entry, '/etc/cni/net.d/10-x.conflist'));
    expect(err.code).toBe(code);
    expect(err.file).toBe('/etc/cni/net.d/10-x.conflist');
    expect(err.message).toContain("'/etc/cni/net.d/10-x.conflist'");
  });
});

describe('unchainPodnet', () => {
  it.each([
    ['pretty', calico],
    ['compact', '{"name":"n","plugins":[{"type":"bridge"},{"type":"portmap"}]}'],
    ['tabs', '{\n\t"plugins": [\n\t\t{"type": "bridge"}\n\t]\n}'],
  ])('undoes chainPodnet byte for byte (%s)', (_name, original) => {
    const chained = chainPodnet(original, entry, 'f').text;
    expect(unchainPodnet(chained, 'f')).toEqual({ text: original, changed: true });
  });

  it('takes out entries wherever they stand, first and repeated ones included', () => {
    const text = '{"plugins": [{"type": "podnet-cni"}, {"type": "bridge"}, {"type":"podnet-cni","x":1}, {"type": "portmap"}]}';
    expect(unchainPodnet(text, 'f').text).toBe('{"plugins": [{"type": "bridge"}, {"type": "portmap"}]}');
  });

  it('leaves a conflist without podnet unchanged', () => {
    expect(unchainPodnet(calico, 'f')).toEqual({ text: calico, changed: false });
  });
});

describe('conflistFromConf', () => {
  const bridge = '{\n  "cniVersion": "1.0.0",\n  "name": "podnet-test",\n  "type": "bridge",\n  "bridge": "cni0",\n  "mtu": 1500.0,\n  "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/16"}]]}\n}\n';

  it('makes {cniVersion, name, plugins: [the plugin without name and cniVersion, podnet]}', () => {
    const text = conflistFromConf(bridge, entry, 'f');
    const conf = JSON.parse(bridge) as Record<string, unknown>;
    const { name, cniVersion, ...plugin } = conf;
    expect(JSON.parse(text)).toEqual({ cniVersion, name, plugins: [plugin, entry] });
    expect(Object.keys(JSON.parse(text) as object)).toEqual(['cniVersion', 'name', 'plugins']);
    expect(text).toContain('"mtu": 1500.0');
    expect(Object.keys(plugins(text)[0] as object)).toEqual(['type', 'bridge', 'mtu', 'ipam']);
  });

  it('leaves out a cniVersion the config does not have', () => {
    expect(JSON.parse(conflistFromConf('{"name": "n", "type": "bridge"}', entry, 'f'))).toEqual({
      name: 'n',
      plugins: [{ type: 'bridge' }, entry],
    });
  });

  it.each([
    ['no type', '{"name": "n"}'],
    ['an empty type', '{"name": "n", "type": ""}'],
    ['no name', '{"type": "bridge"}'],
    ['a numeric cniVersion', '{"name": "n", "type": "bridge", "cniVersion": 1}'],
    ["podnet's own entry", '{"name": "n", "type": "podnet-cni"}'],
  ])('refuses a config with %s', (_name, input) => {
    expect(thrown(() => conflistFromConf(input, entry, '/d/10.conf')).code).toBe('ERR_CNI_CONFIG_INVALID');
  });

  it('recognises its own conflist, with any podnet options, and nothing else', () => {
    const made = conflistFromConf(bridge, entry, 'f');
    expect(conflistRevertsToConf(made, bridge)).toBe(true);
    expect(conflistRevertsToConf(chainPodnet(made, { ...entry, timeoutMs: 3 }, 'f').text, bridge)).toBe(true);
    expect(conflistRevertsToConf(made.replace('"cni0"', '"cni1"'), bridge)).toBe(false);
    expect(conflistRevertsToConf(chainPodnet(unchainPodnet(made, 'f').text.replace(/\n {2}\]/, ',\n    {"type": "portmap"}\n  ]'), entry, 'f').text, bridge)).toBe(false);
    expect(conflistRevertsToConf('{', bridge)).toBe(false);
  });
});
