/**
 * How single adds and deletes reach the kernel: a coalesced job of async calls goes inline (sent from the JS thread)
 * when it is small, else on a libuv worker; addSync/delSync go through the sync channel.
 */
import { native } from '../native.js';
import type { IpsetError } from '../errors.js';
import { checkEntry, type EntryFields, type SetShape } from './entry.js';
import { ipsetError } from './error-map.js';
import type { AdtJob, PendingItem } from './queue.js';
import { publishDone, publishFailed, requestChannel } from './request-trace.js';
import type { IpsetSession } from './session.js';
import { checkSetName } from './set-name.js';
import type { IpsetEntry } from './types.js';

const cmd = native.ipsetCommands;

/**
 * ADT requests up to this size are sent from the JS thread, without a worker. nfnetlink runs ipset's handlers in
 * the sender's context: the answer is on the socket before sendmsg() returns, so a small request costs the JS
 * thread a few microseconds (and never waits for its reply), while handing it to a libuv worker and back costs
 * tens (two thread wake-ups). Bigger batches, whose kernel work takes longer, always go to a worker.
 */
const INLINE_BYTES = 8192;
/**
 * Inline requests also go only into sets of fewer entries than this (as far as this client knows): an add that
 * makes the kernel grow a hash set rehashes every entry inside that sendmsg(), measured at ~7 ms around 50k
 * entries, 60 ms at 400k and 110 ms at 700k on a 2-vCPU VM. That work belongs on a worker.
 */
const INLINE_MAX_ELEMENTS = 32_768;

/** commandLabel is the name errors give an ADT command. */
export function commandLabel(command: number): 'add' | 'del' {
  return command === cmd.add ? 'add' : 'del';
}

/**
 * sendJob checks each entry of a coalesced job against the set, sends those that fit as one ADT batch and settles
 * every caller: with the kernel's answer for its entry, its own check's error, or the batch's error.
 */
export async function sendJob(session: IpsetSession, job: AdtJob): Promise<void> {
  const { command, name, excl, items } = job;
  const label = commandLabel(command);
  let shape: SetShape;
  try {
    shape = await session.shape(name, label);
  } catch (err) {
    for (const item of items) item.reject(err);
    return;
  }
  const writer = session.adtWriter;
  writer.reset();
  const sent: PendingItem[] = [];
  for (const item of items) {
    try {
      writer.push(checkEntry(item.entry, shape, 'entry', session.fields));
      sent.push(item);
    } catch (err) {
      item.reject(err);
    }
  }
  if (sent.length === 0) return;
  let result;
  let inline = false;
  let start = -1;
  try {
    inline = writer.byteLength <= INLINE_BYTES && (await session.size(name)) < INLINE_MAX_ELEMENTS;
    if (requestChannel.hasSubscribers) start = performance.now();
    // Inline: the records are read before adt() returns. Either way the writer is not written until it settles.
    result = await session.handle().adt(command, name, writer.bytes(), excl, inline);
  } catch (err) {
    if (start >= 0) publishFailed(session.about(label, name, inline ? 'inline' : 'worker'), start, sent.length, err);
    for (const item of sent) item.reject(err);
    return;
  }
  session.sets.counted(name, command === cmd.add, result[0]!);
  const failed = new Map<number, number>();
  for (let i = 1; i < result.length; i += 2) failed.set(result[i]!, result[i + 1]!);
  let firstRefusal: IpsetError | undefined;
  sent.forEach((item, index) => {
    const error = failed.get(index);
    if (error === undefined) return item.resolve();
    const refusal = ipsetError(error, { operation: label, set: name, setType: shape.type, entry: item.entry, netns: session.netnsPath });
    firstRefusal ??= refusal;
    item.reject(refusal);
  });
  if (start >= 0) publishDone(session.about(label, name, inline ? 'inline' : 'worker'), start, sent.length, failed.size, firstRefusal);
}

/**
 * sendSync makes one ADD or DEL through the sync channel. Throws InvalidArgumentError for a bad name or an entry
 * that does not fit, IpsetError for the kernel's refusal.
 */
export function sendSync(session: IpsetSession, command: number, label: string, name: string, entry: IpsetEntry, excl: boolean): void {
  // A name with a known shape was checked when it was learned: a name over 10 characters costs its check a
  // UTF-8 byte count, a call into C++, which a hot loop of single adds would pay on every call.
  const shape = session.sets.shape(name) ?? session.shapeSync(checkSetName(name), label);
  const fields = checkEntry(entry, shape, 'entry', session.fields);
  session.live();
  if (requestChannel.hasSubscribers) return sendSyncTraced(session, command, label, name, entry, excl, shape, fields);
  const error = session.sync.send(command, excl, name, fields);
  if (error !== 0) throw ipsetError(error, { operation: label, set: name, setType: shape.type, entry, netns: session.netnsPath });
}

/** sendSyncTraced is sendSync's send, published on `podnet:ipset:request`. */
function sendSyncTraced(
  session: IpsetSession,
  command: number,
  label: string,
  name: string,
  entry: IpsetEntry,
  excl: boolean,
  shape: SetShape,
  fields: EntryFields,
): void {
  const about = session.about(label, name, 'sync');
  const start = performance.now();
  let error;
  try {
    error = session.sync.send(command, excl, name, fields);
  } catch (err) {
    publishFailed(about, start, 1, err);
    throw err;
  }
  if (error === 0) return publishDone(about, start, 1, 0);
  const refusal = ipsetError(error, { operation: label, set: name, setType: shape.type, entry, netns: session.netnsPath });
  publishDone(about, start, 1, 1, refusal);
  throw refusal;
}
