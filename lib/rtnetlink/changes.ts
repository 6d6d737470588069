/**
 * The changes Rtnetlink.batch takes, checked one by one as the single calls check theirs, and what a refused delete
 * of a missing object means under ignoreMissing.
 */
import { RtnetlinkError } from '../errors.js';
import { native, type RawRtnetlinkChange } from '../native.js';
import { checkArray, checkOptions, invalidType, invalidValue } from '../validate.js';
import { checkRoute, checkRule } from './spec.js';
import type { RtnetlinkChange } from './types.js';

const K = native.rtnetlinkConstants;

/** checkFlag returns an optional boolean option, false when absent. */
export function checkFlag(name: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw invalidType(name, 'a boolean', value);
  return value;
}

/** addFlags are the flags of an add: it creates, exclusively (a duplicate is EEXIST) unless it replaces. */
export function addFlags(replace: boolean): number {
  return K.create | (replace ? K.replace : K.excl);
}

/** CheckedChange is a change ready for the addon, with what its outcome needs. */
export interface CheckedChange {
  op: RtnetlinkChange['op'];
  /** The route or rule as the caller gave it, for the error's context. */
  object: unknown;
  raw: RawRtnetlinkChange;
  /** A route's output interface by name: its index is looked up before the change is sent. */
  oifName: string | undefined;
  ignoreMissing: boolean;
}

/** isMissing tells whether err is the kernel's answer to deleting what is not there (routes: ESRCH, rules: ENOENT). */
export function isMissing(err: unknown): boolean {
  return err instanceof RtnetlinkError && (err.code === 'ESRCH' || err.code === 'ENOENT');
}

function checkChange(value: unknown, name: string): CheckedChange {
  const c = checkOptions<Record<string, unknown>>(name, value);
  const flag = (key: string): boolean => checkFlag(`${name}.${key}`, c[key]);
  switch (c.op) {
    case 'addRoute':
    case 'delRoute': {
      const add = c.op === 'addRoute';
      const checked = checkRoute(c.route, !add, `${name}.route`);
      const flags = add ? addFlags(flag('replace')) : 0;
      return {
        op: c.op,
        object: c.route,
        raw: { type: add ? K.newRoute : K.delRoute, flags, route: checked.raw },
        oifName: checked.oifName,
        ignoreMissing: !add && flag('ignoreMissing'),
      };
    }
    case 'addRule':
    case 'delRule': {
      const add = c.op === 'addRule';
      const raw = checkRule(c.rule, !add, `${name}.rule`);
      return {
        op: c.op,
        object: c.rule,
        raw: { type: add ? K.newRule : K.delRule, flags: add ? addFlags(false) : 0, rule: raw },
        oifName: undefined,
        ignoreMissing: !add && flag('ignoreMissing'),
      };
    }
    default:
      throw invalidValue(`${name}.op`, "'addRoute', 'delRoute', 'addRule' or 'delRule'", c.op);
  }
}

/** checkChanges checks every change, index by index (a hole is refused); throws InvalidArgumentError naming it. */
export function checkChanges(changes: unknown): CheckedChange[] {
  return checkArray('changes', changes, 'an array of changes', checkChange);
}
