/**
 * The queue of scripted faults every fake kernel shares: faults fire once each, in the order they were added, on
 * the first request their matcher accepts. What a matcher says and what a request carries are each fake's own.
 */
export class MatchingFaultQueue<Fault extends { kind: string; match: Match }, Match, Request> {
  readonly #pending: Fault[] = [];
  readonly #matches: (match: Match, request: Request) => boolean;

  constructor(matches: (match: Match, request: Request) => boolean) {
    this.#matches = matches;
  }

  add(fault: Fault): void {
    this.#pending.push(fault);
  }

  get size(): number {
    return this.#pending.length;
  }

  clear(): void {
    this.#pending.length = 0;
  }

  /** take removes and returns the first pending fault (of one of kinds, when given) that request matches. */
  take(request: Request, kinds?: readonly Fault['kind'][]): Fault | undefined {
    const i = this.#pending.findIndex((f) => (kinds === undefined || kinds.includes(f.kind)) && this.#matches(f.match, request));
    if (i < 0) return undefined;
    return this.#pending.splice(i, 1)[0];
  }
}
