/**
 * The *Sync single-entry fast path. A frame (a Buffer the client owns) carries the request to a native function
 * bound to it, and the answer back: a call converts no argument (passing the request as five arguments costs
 * ~0.4 us of a ~6 us add; native/ipset/sync_channel.h).
 */
import { native, type RawIpsetHandle } from '../native.js';
import type { EntryFields } from './entry.js';
import { RecordWriter } from './record.js';

const FRAME = native.ipsetSyncFrame;
const NAME_ROOM = FRAME.record - FRAME.name;

export class SyncChannel {
  readonly #frame = Buffer.alloc(FRAME.bytes);
  readonly #result = new Int32Array(this.#frame.buffer, this.#frame.byteOffset + FRAME.result, 1);
  readonly #writer = new RecordWriter(0, this.#frame.subarray(FRAME.record));
  readonly #send: () => void;
  /** The name the frame holds: a hot loop of calls to one set writes it once. */
  #name: string | undefined;

  constructor(handle: RawIpsetHandle) {
    this.#send = handle.syncChannel(this.#frame);
  }

  /**
   * send makes one ADD or DEL of fields in set name (a name the caller checked) and returns the kernel's error
   * for the entry, or 0. Throws what the native call throws (closed handle, system errors).
   */
  send(command: number, excl: boolean, name: string, fields: EntryFields): number {
    const frame = this.#frame;
    if (name !== this.#name) {
      this.#name = undefined;
      // write() copies whole characters only: a name that does not fit would be cut short, not refused.
      const length = frame.write(name, FRAME.name, NAME_ROOM, 'utf8');
      if (length === 0 || length !== Buffer.byteLength(name)) throw new RangeError(`set name does not fit a sync frame: ${JSON.stringify(name)}`);
      frame[FRAME.nameLength] = length;
      this.#name = name;
    }
    frame[FRAME.command] = command;
    frame[FRAME.flags] = excl ? FRAME.excl : 0;
    this.#writer.reset();
    this.#writer.push(fields);
    // A JS peer that re-enters with a sync call of its own rewrites the frame before that call is refused
    // (ERR_IPSET_REENTERED); the native side has read this call's request by then (it copies the frame first),
    // and only this call writes a result.
    this.#send();
    return this.#result[0]!;
  }
}
