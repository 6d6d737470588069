// A FakeNode and the NodeNetwork options wired to its fakes, made per test and closed after it (newest first).
import { afterEach } from 'vitest';

import type { NodeNetworkOptions } from '../../lib/index.js';
import { FakeNode } from '../../lib/testing/index.js';

/** FakeAgentParts is a FakeNode and NodeNetwork options wired to its fakes. */
export interface FakeAgentParts {
  node: FakeNode;
  options: NodeNetworkOptions;
}

/**
 * fakeAgentParts registers, in the suite it is called in, that what a test made is closed after it, and returns the
 * maker a test calls.
 */
export function fakeAgentParts(): () => Promise<FakeAgentParts> {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });
  return async () => {
    const node = new FakeNode();
    cleanup.push(() => node.close());
    const options = await node.options();
    cleanup.push(() => options.ipset?.close());
    return { node, options };
  };
}
