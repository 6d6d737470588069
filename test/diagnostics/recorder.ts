// Subscribes to one of podnet's diagnostics channels for a test and keeps what it publishes, in order.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';

import { expect } from 'vitest';

import type { DiagnosticsChannelName, DiagnosticsMessages } from '../../lib/index.js';

export interface Recorder<N extends DiagnosticsChannelName> extends Disposable {
  readonly messages: DiagnosticsMessages[N][];
  /** take returns the messages so far and forgets them. */
  take(): DiagnosticsMessages[N][];
  stop(): void;
}

export function record<N extends DiagnosticsChannelName>(name: N): Recorder<N> {
  const messages: DiagnosticsMessages[N][] = [];
  const listener = (message: unknown) => {
    messages.push(message as DiagnosticsMessages[N]);
  };
  subscribe(name, listener);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    unsubscribe(name, listener);
  };
  return {
    messages,
    take: () => messages.splice(0, messages.length),
    stop,
    [Symbol.dispose]: stop,
  };
}

/** expectTiming checks that a message's start and duration lie inside [before, after] (performance.now() ms). */
export function expectTiming(message: { startTime: number; durationMs: number }, before: number, after: number): void {
  expect(message.startTime).toBeGreaterThanOrEqual(before);
  expect(message.durationMs).toBeGreaterThanOrEqual(0);
  expect(message.startTime + message.durationMs).toBeLessThanOrEqual(after);
}
