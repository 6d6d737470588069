// The package entry re-exports the seqpacket API as the same objects as lib/unix (one class each, so instanceof
// holds whichever way a caller imports it).
import { describe, expect, it } from 'vitest';

import * as podnet from '../../lib/index.js';
import * as unix from '../../lib/unix/index.js';

describe("podnet's entry (any user)", () => {
  it.each(['SeqpacketServer', 'SeqpacketSocket', 'ReceivedFd', 'SeqpacketMessageError', 'SEQPACKET_MAX_BYTES'] as const)(
    'exports %s from lib/unix',
    (name) => {
      expect(unix[name]).toBeDefined();
      expect(podnet[name]).toBe(unix[name]);
    },
  );
});
