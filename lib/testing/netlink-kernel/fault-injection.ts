/**
 * The fault-scheduling half of the fake kernels whose faults are an error, a lost reply or a truncated reply
 * (FakeIpsetKernel, FakeNftables): the public methods that schedule faults, their argument checks, and the queue the
 * fake takes them from while it answers.
 */
import { invalidType, invalidValue } from '../../validate.js';
import { MatchingFaultQueue } from './fault-queue.js';
import { checkErrno, checkTruncation } from './peer-options.js';

/** KernelFault is one scheduled fault of a fake whose matchers are Match. */
export type KernelFault<Match> =
  | { kind: 'error'; errno: number; match: Match }
  | { kind: 'drop'; match: Match }
  | { kind: 'truncate'; bytes: number | undefined; match: Match }
  | { kind: 'rehash'; match: Match };

/** numberOf looks a lower-case message or command name up in a table of kernel constants; undefined if absent. */
export function numberOf(table: Readonly<Record<string, number>>, name: string): number | undefined {
  const key = name.toUpperCase();
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/**
 * MatcherShape describes a fault matcher of two optional fields: `name` holds a message or command name that `known`
 * accepts (`expected` says what it should be in the error), `about` holds the string naming what the message is about.
 */
export interface MatcherShape {
  readonly name: string;
  readonly known: (name: string) => boolean;
  readonly expected: string;
  readonly about: string;
}

/** checkFaultMatch validates a fault matcher of the given shape and returns a copy. Throws InvalidArgumentError. */
export function checkFaultMatch<Match extends object>(name: string, match: unknown, shape: MatcherShape): Match {
  if (match === undefined) return {} as Match;
  if (typeof match !== 'object' || match === null) throw invalidType(name, 'an object', match);
  const m = match as Record<string, unknown>;
  const kind = m[shape.name];
  if (kind !== undefined && (typeof kind !== 'string' || !shape.known(kind))) {
    throw invalidValue(`${name}.${shape.name}`, shape.expected, kind);
  }
  const about = m[shape.about];
  if (about !== undefined && typeof about !== 'string') throw invalidType(`${name}.${shape.about}`, 'a string', about);
  return { ...m } as Match;
}

/**
 * FaultInjectingPeer is the base of a fake kernel with scheduled faults: it checks and queues them, and the fake takes
 * the first one a message matches with `takeFault`. Each fault fires once, in the order it was added.
 */
export abstract class FaultInjectingPeer<Match extends object, Request> {
  readonly #faults: MatchingFaultQueue<KernelFault<Match>, Match, Request>;
  readonly #shape: MatcherShape;
  readonly #errnoMax: number;

  protected constructor(matches: (match: Match, request: Request) => boolean, shape: MatcherShape, errnoMax = 4095) {
    this.#faults = new MatchingFaultQueue(matches);
    this.#shape = shape;
    this.#errnoMax = errnoMax;
  }

  /**
   * failNext makes the next message (or the next one matching `match`) fail with `errno` (sign ignored) without
   * running it; the error reply is sent with or without ACK, and in a batch the batch is aborted as for any refusal.
   * Throws InvalidArgumentError on a bad errno or matcher.
   */
  failNext(errno: number, match?: Match): void {
    this.#faults.add({ kind: 'error', errno: checkErrno('errno', errno, this.#errnoMax), match: this.#match(match) });
  }

  /**
   * dropNextReply applies the next (matching) request but loses every datagram it would answer with, like replies
   * lost to a full receive buffer. Throws InvalidArgumentError on a bad matcher.
   */
  dropNextReply(match?: Match): void {
    this.#faults.add({ kind: 'drop', match: this.#match(match) });
  }

  /**
   * truncateNextReply applies the next (matching) request and cuts its first reply datagram to `bytes` (default:
   * half of it). Throws InvalidArgumentError on a bad length or matcher.
   */
  truncateNextReply(bytes?: number, match?: Match): void {
    this.#faults.add({ kind: 'truncate', bytes: checkTruncation(bytes), match: this.#match(match) });
  }

  /**
   * schedule queues a fault of a kind only some fakes have, with its matcher checked. Throws InvalidArgumentError on
   * a bad matcher.
   * @internal
   */
  protected schedule(fault: KernelFault<Match>): void {
    this.#faults.add({ ...fault, match: this.#match(fault.match) });
  }

  /** pendingFaults is how many scheduled faults have not fired yet. */
  get pendingFaults(): number {
    return this.#faults.size;
  }

  /** clearFaults drops every scheduled fault. */
  clearFaults(): void {
    this.#faults.clear();
  }

  /**
   * takeFault removes and returns the first pending fault (of one of kinds, when given) that request matches.
   * @internal
   */
  protected takeFault(request: Request, kinds?: readonly KernelFault<Match>['kind'][]): KernelFault<Match> | undefined {
    return this.#faults.take(request, kinds);
  }

  #match(match: unknown): Match {
    return checkFaultMatch<Match>('match', match, this.#shape);
  }
}
