// The request checks on their own (lib/cni/request.ts): what cannot reach them over the wire (a config over 1 MiB,
// which the plugin answers itself), CNI_ARGS parsing, and which of a repeated variable counts.
import { describe, expect, it } from 'vitest';

import { parseCniArgs, parseRequest, type RequestInput } from '../../lib/cni/request.js';
import { CniError } from '../../lib/cni/errors.js';
import { cniConfig, cniEnv } from './helpers/cni-fixtures.js';

function input(env: [string, string][], stdin: string | Uint8Array, fd = true): RequestInput {
  return { env, stdin: typeof stdin === 'string' ? Buffer.from(stdin) : stdin, hasNetnsFd: fd, netnsErrno: 0 };
}

describe('parseRequest', () => {
  it('answers a config over 1 MiB with code 6', () => {
    const outcome = parseRequest(input(cniEnv('ADD'), new Uint8Array(1048577).fill(0x20)));
    expect(outcome.ok).toBe(false);
    if (!outcome.ok) expect([outcome.error.cniCode, outcome.error.details]).toEqual([6, 'stdin']);
  });

  it('takes the first of a repeated variable, as getenv does', () => {
    const env: [string, string][] = [...cniEnv('ADD'), ['CNI_COMMAND', 'DEL'], ['CNI_IFNAME', 'eth1']];
    const outcome = parseRequest(input(env, cniConfig()));
    expect(outcome.ok && [outcome.request.command, outcome.request.ifName]).toEqual(['ADD', 'eth0']);
  });

  it('keeps the variables it does not read for the handler', () => {
    const outcome = parseRequest(input([...cniEnv('ADD'), ['CNI_EXTRA', 'x']], cniConfig()));
    expect(outcome.ok && outcome.request.env.get('CNI_EXTRA')).toBe('x');
  });

  it('echoes the newest version when the config has none to echo', () => {
    const outcome = parseRequest(input(cniEnv('ADD'), 'nope'));
    expect(outcome.ok || outcome.cniVersion).toBe('1.1.0');
  });
});

describe('parseCniArgs', () => {
  it('reads K=V pairs, values with = included, the last of a repeated key winning', () => {
    expect([...parseCniArgs('IgnoreUnknown=1;A=x=y;A=z')]).toEqual([
      ['IgnoreUnknown', '1'],
      ['A', 'z'],
    ]);
    expect(parseCniArgs('').size).toBe(0);
  });

  it.each(['A', '=1', 'A=1;', ';A=1', 'A=1;;B=2'])('refuses %j with code 4 naming CNI_ARGS', (text) => {
    let thrown: unknown;
    try {
      parseCniArgs(text);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(CniError);
    expect(thrown).toMatchObject({ cniCode: 4, details: 'CNI_ARGS' });
  });
});
