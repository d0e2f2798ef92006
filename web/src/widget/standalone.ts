/**
 * Self-contained <qk-scope> for blogs: `<script src="qk-scope.js"></script><qk-scope></qk-scope>`.
 * The widget's .wasm is inlined, gzip-compressed and base64-encoded (build plugin in
 * web/widget.vite.config.ts), and inflated with the platform's DecompressionStream:
 * nothing is fetched, and no eval, so it runs offline under a strict CSP that allows
 * 'wasm-unsafe-eval'. Including the script twice keeps the first definition and the
 * one shared core (see core.ts).
 */
import wasmGzipBase64 from 'virtual:qkscope-widget-wasm';
import { provideWasmBinary } from './core';
import './define';

async function inflate(b64: string): Promise<Uint8Array> {
  const bin = atob(b64);
  const gz = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) gz[i] = bin.charCodeAt(i);
  const stream = new Blob([gz]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

// Registered before define runs its first update (elements load the core in a microtask).
provideWasmBinary(inflate(wasmGzipBase64));
