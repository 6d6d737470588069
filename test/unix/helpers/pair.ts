import { SeqpacketServer, SeqpacketSocket } from '../../../lib/unix/index.js';

/** A server and both ends of one connection to it; [Symbol.dispose] closes all three. */
export interface Pair extends Disposable {
  server: SeqpacketServer;
  client: SeqpacketSocket;
  conn: SeqpacketSocket;
}

/** pair listens at path and connects to it. */
export async function pair(path: string): Promise<Pair> {
  const server = SeqpacketServer.listen({ path });
  try {
    const accepted = server.accept({ timeoutMs: 10_000 });
    const client = await SeqpacketSocket.connect(path, { timeoutMs: 10_000 });
    const conn = await accepted;
    return {
      server,
      client,
      conn,
      [Symbol.dispose]() {
        client.close();
        conn.close();
        server.close();
      },
    };
  } catch (err) {
    server.close();
    throw err;
  }
}

/** bytes is the UTF-8 encoding of text, as a Buffer. */
export const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

/**
 * fillSendBuffer sends chunk until the socket buffer is full (nobody reads), so that the next message has to wait.
 * Returns how many went out; throws if the buffer never filled or a send failed otherwise.
 */
export async function fillSendBuffer(socket: SeqpacketSocket, chunk: Uint8Array): Promise<number> {
  for (let sent = 0; sent < 100_000; sent++) {
    try {
      await socket.send(chunk, { timeoutMs: 20 });
    } catch (err) {
      if ((err as { code?: unknown }).code === 'ETIMEDOUT') return sent;
      throw err;
    }
  }
  throw new Error('the socket buffer never filled');
}
