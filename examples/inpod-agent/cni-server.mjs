// The agent's end of the CNI plugin: HTTP on a unix socket with Node's own http module.
//
//   POST /cni/add   {"uid", "netns", "ips": [...], "name", "namespace", "serviceAccount"}   -> 200 {"ok": true}
//   POST /cni/del   {"uid", "netns", "ips": [...]}                                          -> 200 {"ok": true}
//   GET  /healthz   -> 200 when every enrolled pod is in sync, 503 otherwise, with the verify report
//
// Failures answer with {"error": {"code", "message", ...}}: 400 for a malformed request (the plugin must not retry
// it), 503 for an AgentError that a retry can fix, 500 for one it cannot. The plugin reads `code`, never `message`.
import { chmodSync, lstatSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';

import { AgentError, InvalidArgumentError } from 'podnet';

/** Requests are small JSON documents; anything larger is refused before it is buffered. */
const MAX_BODY_BYTES = 64 * 1024;

class RequestError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new RequestError(413, 'ERR_BODY_TOO_LARGE', `request body over ${MAX_BODY_BYTES} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      } catch {
        reject(new RequestError(400, 'ERR_BAD_JSON', 'request body is not JSON'));
      }
    });
  });
}

/** The status and body for an error: podnet's errors carry a stable code, and AgentError says if a retry helps. */
function failure(err) {
  if (err instanceof RequestError) return [err.status, { code: err.code, message: err.message }];
  if (err instanceof InvalidArgumentError) return [400, { code: err.code, message: err.message, argument: err.argument }];
  if (err instanceof AgentError) {
    const body = { code: err.code, message: err.message, step: err.step, retryable: err.retryable, cause: err.cause?.code };
    return [err.retryable ? 503 : 500, body];
  }
  return [500, { code: err?.code ?? 'ERR_INTERNAL', message: String(err?.message ?? err) }];
}

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * listenCni serves handlers ({ add(event), del(event), health() }) on a unix socket at path, only for its owner
 * (mode 0600: the CNI plugin runs as root). A socket file left by an earlier run is removed first. Resolves with the
 * http.Server once it listens.
 */
export async function listenCni(path, handlers) {
  try {
    if (lstatSync(path).isSocket()) rmSync(path);
  } catch (err) {
    if (err.code !== 'ENOENT') throw err;
  }
  const routes = {
    'POST /cni/add': async (req) => {
      await handlers.add(await readJson(req));
      return [200, { ok: true }];
    },
    'POST /cni/del': async (req) => {
      await handlers.del(await readJson(req));
      return [200, { ok: true }];
    },
    'GET /healthz': async () => {
      const report = await handlers.health();
      return [report.inSync ? 200 : 503, report];
    },
  };
  const server = createServer((req, res) => {
    const route = routes[`${req.method} ${req.url}`];
    if (!route) {
      send(res, 404, { error: { code: 'ERR_NOT_FOUND', message: `no route ${req.method} ${req.url}` } });
      return;
    }
    route(req).then(
      ([status, body]) => send(res, status, body),
      (err) => {
        const [status, body] = failure(err);
        send(res, status, { error: body });
      },
    );
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
  chmodSync(path, 0o600);
  return server;
}
