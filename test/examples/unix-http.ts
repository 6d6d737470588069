// The CNI plugin's side of the in-pod agent example: one HTTP request over its unix socket.
import { request } from 'node:http';

/** callAgent sends one request to the HTTP server on socketPath and resolves its status and parsed JSON body. */
export function callAgent(socketPath: string, method: string, path: string, body?: string): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method, path, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c));
      res.on('error', reject);
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) });
        } catch (err) {
          reject(new Error(`${method} ${path}: answer is not JSON: ${text}`, { cause: err }));
        }
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
