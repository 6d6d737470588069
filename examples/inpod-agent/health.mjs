// The agent's health endpoint: GET /healthz answers 200 when everything verifies, 503 with the report otherwise.
// Plain HTTP from node:http, on a unix socket (mode 0600: for the node's own probes) or on a TCP port of the
// loopback address (what a kubelet httpGet probe of a hostNetwork pod reaches).
import { chmodSync, lstatSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * listenHealth serves GET /healthz at `socketPath` (a stale socket file is replaced) or on 127.0.0.1:`port`.
 * `report()` resolves { healthy, ...details }; a rejection is answered 503 with the error's code and message.
 * Resolves the http.Server once it listens.
 */
export async function listenHealth({ socketPath, port, report }) {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/healthz') {
      send(res, 404, { error: { code: 'ERR_NOT_FOUND', message: `no route ${req.method} ${req.url}` } });
      return;
    }
    report().then(
      (body) => send(res, body.healthy ? 200 : 503, body),
      (err) => send(res, 503, { healthy: false, error: { code: err?.code ?? 'ERR_UNKNOWN', message: String(err?.message ?? err) } }),
    );
  });
  if (socketPath !== undefined) {
    try {
      if (lstatSync(socketPath).isSocket()) rmSync(socketPath);
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
  }
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    const ready = () => {
      server.off('error', reject);
      resolve();
    };
    if (socketPath !== undefined) server.listen(socketPath, ready);
    else server.listen(port, '127.0.0.1', ready);
  });
  if (socketPath !== undefined) chmodSync(socketPath, 0o600);
  return server;
}
