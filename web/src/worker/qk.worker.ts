/**
 * The qkscope Web Worker: loads the WebAssembly module (and, on the first fast call, the
 * tiled one) off the main thread and answers the requests of client.ts (protocol.ts), so
 * long computations never block the page. Result buffers are transferred, not copied.
 */
import { loadQkScope } from '@qkscope/wasm';
import { handle, transferables } from './handler';
import type { WorkerRequest } from './protocol';

interface Scope {
  onmessage: ((e: MessageEvent<WorkerRequest>) => void) | null;
  postMessage(message: unknown, options: { transfer: Transferable[] }): void;
}
const scope = self as unknown as Scope;
const qk = loadQkScope();

scope.onmessage = (e) => {
  const req = e.data;
  qk.then((m) => handle(req, m, () => performance.now()))
    .catch((err: unknown) => ({ id: req.id, ok: false as const, error: { name: 'Error', message: `worker: the module did not load: ${String(err)}` } }))
    .then((res) => scope.postMessage(res, { transfer: res.ok ? transferables(res.value) : [] }));
};
