// podnet-cni's reading of its network config, through the real binary: what its JSON scanner accepts (the
// invocation is forwarded: with no agent, code 11) and refuses (code 6 without contacting the agent), and its own
// keys' checks (code 7).
import { describe, expect, it } from 'vitest';

import { cniEnv, config, parseError, runPlugin, StandInAgent } from './helpers/plugin-run.js';

const NO_AGENT = '/nonexistent-podnet-test/cni.sock';
const noAgent = (body: string): string => `{"socketPath":"${NO_AGENT}",${body}}`;
const bytes = (...parts: (string | number[])[]): Buffer => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));

describe('podnet-cni config scanner: accepted documents are forwarded', () => {
  const accepted: { name: string; stdin: string | Buffer }[] = [
    { name: 'a plain object', stdin: noAgent('"cniVersion":"1.0.0"') },
    { name: 'whitespace all around', stdin: ` \t\r\n${noAgent('"a" : [ 1 , 2 ] ')}\n ` },
    { name: 'every escape', stdin: noAgent('"a":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\uD83D\\uDE00"') },
    { name: 'lone surrogate escapes (valid JSON)', stdin: noAgent('"a":"\\ud800x\\udc00"') },
    { name: 'numbers in every form', stdin: noAgent('"a":[0,-0,1.5,-2e10,3E+2,4e-2,123456789012345678901234567890]') },
    { name: 'literals and empty containers', stdin: noAgent('"a":[true,false,null,{},[],""]') },
    { name: 'raw UTF-8 of every length', stdin: noAgent('"a":"é€😀"') },
    { name: 'nesting 100000 deep', stdin: noAgent(`"a":${'['.repeat(100_000)}${']'.repeat(100_000)}`) },
    { name: 'our keys nested deeper (only top-level keys count)', stdin: noAgent('"x":{"socketPath":5,"timeoutMs":"no"}') },
  ];

  it.each(accepted)('$name', async ({ stdin }) => {
    const run = await runPlugin(cniEnv('ADD'), stdin);
    expect(run.status).toBe(1);
    expect(parseError(run.stdout)).toMatchObject({ code: 11 });
  });

  it('reads an escaped key as the key it spells, and the last of duplicates', async () => {
    const run = await runPlugin(cniEnv('ADD'), `{"cni\\u0056ersion":"0.4.0","socketPath":7,"socketPath":"${NO_AGENT}x"}`);
    const err = parseError(run.stdout);
    expect(err).toMatchObject({ cniVersion: '0.4.0', code: 11 });
    expect(err.msg).toContain(`${NO_AGENT}x: `);
  });
});

describe('podnet-cni config scanner: refused documents are code 6 without contacting the agent', () => {
  const refused: { name: string; stdin: string | Buffer; says: string }[] = [
    { name: 'empty stdin', stdin: '', says: 'expected a JSON object, found the end of the input at byte 0' },
    { name: 'an array', stdin: '[]', says: 'expected a JSON object at byte 0' },
    { name: 'a string', stdin: '"x"', says: 'expected a JSON object at byte 0' },
    { name: 'a trailing comma', stdin: '{"a":1,}', says: 'expected a string as the object key at byte 7' },
    { name: 'a leading zero', stdin: '{"a":01}', says: "expected ',' or '}' in an object at byte 6" },
    { name: 'a bare decimal point', stdin: '{"a":1.}', says: 'expected digits after the decimal point at byte 7' },
    { name: 'a missing integer part', stdin: '{"a":.5}', says: 'expected a value at byte 5' },
    { name: 'a lone minus', stdin: '{"a":-}', says: 'expected digits in a number at byte 6' },
    { name: 'single quotes', stdin: "{'a':1}", says: 'expected a string as the object key at byte 1' },
    { name: 'a broken literal', stdin: '{"a":tru}', says: 'invalid literal at byte 5' },
    { name: 'NaN', stdin: '{"a":NaN}', says: 'expected a value at byte 5' },
    { name: 'a raw control character in a string', stdin: '{"a":"x\u0001"}', says: 'unescaped control character in a string at byte 7' },
    { name: 'an unknown escape', stdin: '{"a":"\\x"}', says: 'invalid escape in a string at byte 7' },
    { name: 'a short \\u escape', stdin: '{"a":"\\u12"}', says: 'expected four hex digits after \\u at byte 8' },
    { name: 'an unterminated string', stdin: '{"a":"abc', says: 'unterminated string at byte 9' },
    { name: 'two documents', stdin: '{}{}', says: 'unexpected bytes after the JSON object at byte 2' },
    { name: 'trailing garbage', stdin: '{} x', says: 'unexpected bytes after the JSON object at byte 3' },
    { name: 'a byte order mark', stdin: bytes([0xef, 0xbb, 0xbf], '{}'), says: 'expected a JSON object at byte 0' },
    { name: 'an overlong UTF-8 form', stdin: bytes('{"a":"', [0xc0, 0x80], '"}'), says: 'invalid UTF-8 in a string at byte 6' },
    { name: 'a UTF-8 surrogate', stdin: bytes('{"a":"', [0xed, 0xa0, 0x80], '"}'), says: 'invalid UTF-8 in a string at byte 6' },
    { name: 'a byte past U+10FFFF', stdin: bytes('{"a":"', [0xf5, 0x80, 0x80, 0x80], '"}'), says: 'invalid UTF-8 in a string at byte 6' },
    { name: 'a truncated UTF-8 sequence', stdin: bytes('{"a":"', [0xe2, 0x82]), says: 'invalid UTF-8 in a string at byte 6' },
    { name: 'an object never closed', stdin: '{"a":1', says: 'unexpected end of the input inside an object or array at byte 6' },
    { name: 'a mismatched bracket', stdin: '{"a":[1}', says: "expected ',' or ']' in an array at byte 7" },
    { name: 'nesting 100000 deep, never closed', stdin: `{"a":${'['.repeat(100_000)}`, says: 'expected a value, found the end of the input at byte 100005' },
  ];

  it.each(refused)('$name', async ({ stdin, says }) => {
    using agent = new StandInAgent();
    const run = await runPlugin(cniEnv('ADD'), stdin);
    expect(run.status).toBe(1);
    expect(parseError(run.stdout)).toEqual({ cniVersion: '1.1.0', code: 6, msg: 'failed to decode the network config', details: says });
    await expect(agent.accept(50)).rejects.toMatchObject({ code: 'ETIMEDOUT' });
  });

  it('a config over 1 MiB is code 6 without contacting the agent', async () => {
    using agent = new StandInAgent();
    const base = config({ socketPath: agent.socketPath, pad: '' });
    const stdin = Buffer.from(base.replace('"pad":""', `"pad":"${'x'.repeat(1024 * 1024 + 1 - base.length)}"`));
    expect(stdin.byteLength).toBe(1024 * 1024 + 1);
    const run = await runPlugin(cniEnv('CHECK'), stdin);
    expect(run.status).toBe(1);
    expect(parseError(run.stdout)).toEqual({
      cniVersion: '1.1.0',
      code: 6,
      msg: 'failed to decode the network config',
      details: 'the config on stdin is over 1048576 bytes',
    });
    await expect(agent.accept(100)).rejects.toMatchObject({ code: 'ETIMEDOUT' });
  });

  it.each(['STATUS', 'DEL', 'GC'])('%s with a config that is not JSON', async (command) => {
    using agent = new StandInAgent();
    const run = await runPlugin(cniEnv(command), `{"socketPath":"${agent.socketPath}"`);
    if (command === 'STATUS') {
      expect(run.status).toBe(1);
      expect(parseError(run.stdout).code).toBe(6);
    } else {
      expect(run.status).toBe(0);
      expect(run.stdout.toString()).toBe('');
      expect(run.stderr.toString()).toMatch(new RegExp(`^podnet-cni: ${command}: failed to decode the network config: unexpected end`));
    }
    await expect(agent.accept(100)).rejects.toMatchObject({ code: 'ETIMEDOUT' });
  });
});

describe("podnet-cni config: the plugin's own keys", () => {
  const invalid: { name: string; fields: Record<string, unknown>; says: string }[] = [
    { name: 'timeoutMs 0', fields: { timeoutMs: 0 }, says: '"timeoutMs" must be an integer from 1 to 600000' },
    { name: 'timeoutMs 600001', fields: { timeoutMs: 600001 }, says: '"timeoutMs" must be an integer from 1 to 600000' },
    { name: 'timeoutMs 1.5', fields: { timeoutMs: 1.5 }, says: '"timeoutMs" must be an integer from 1 to 600000' },
    { name: 'timeoutMs as a string', fields: { timeoutMs: '100' }, says: '"timeoutMs" must be an integer from 1 to 600000' },
    { name: 'timeoutMs null', fields: { timeoutMs: null }, says: '"timeoutMs" must be an integer from 1 to 600000' },
    { name: 'socketPath a number', fields: { socketPath: 5 }, says: '"socketPath" must be a socket path of 1 to 107 bytes without NUL' },
    { name: 'socketPath empty', fields: { socketPath: '' }, says: '"socketPath" must be a socket path of 1 to 107 bytes without NUL' },
    { name: 'socketPath of 108 bytes', fields: { socketPath: `/${'s'.repeat(107)}` }, says: '"socketPath" must be a socket path of 1 to 107 bytes without NUL' },
    { name: 'socketPath with NUL', fields: { socketPath: '/run/a\u0000b' }, says: '"socketPath" must be a socket path of 1 to 107 bytes without NUL' },
    { name: 'cniVersion a number', fields: { cniVersion: 1 }, says: '"cniVersion" must be a string' },
  ];

  it.each(invalid)('$name: code 7', async ({ fields, says }) => {
    const run = await runPlugin(cniEnv('ADD'), config(fields));
    expect(run.status).toBe(1);
    expect(parseError(run.stdout)).toMatchObject({ code: 7, msg: 'invalid network config', details: says });
  });

  it('timeoutMs 1e3 is 1000 (a JSON number of that value)', async () => {
    using agent = new StandInAgent();
    const accepted = agent.accept();
    const run = await runPlugin(cniEnv('ADD'), `{"socketPath":"${agent.socketPath}","timeoutMs":3e2}`);
    using conn = await accepted;
    expect(parseError(run.stdout).msg).toBe(`podnet agent not reachable at ${agent.socketPath}: no answer within 300 ms`);
    expect(conn.closed).toBe(false);
  });

  it('a socketPath of exactly 107 bytes is used as given', async () => {
    const path = `/${'s'.repeat(106)}`;
    const run = await runPlugin(cniEnv('ADD'), config({ socketPath: path }));
    expect(parseError(run.stdout)).toMatchObject({ code: 11, msg: `podnet agent not reachable at ${path}: connect: No such file or directory (ENOENT)` });
  });
});
