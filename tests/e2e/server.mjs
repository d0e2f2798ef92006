// tests/e2e/server.mjs — what the browser tests and benchmarks share: `vite preview` of the
// static build (web/dist) on a free port (startPreview), a small static server for pages they
// assemble themselves (serveFiles), the wasm core in Node (loadCore) and headless Chromium
// with the flags every run uses (launchChromium).
//   const server = await startPreview(); ... after(() => server.close());
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize, resolve as resolvePath, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const viteBin = fileURLToPath(new URL('../../node_modules/.bin/vite', import.meta.url));
const distIndex = fileURLToPath(new URL('../../web/dist/index.html', import.meta.url));

/** A TCP port that was free a moment ago. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function waitForHttp(url, child, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last = null;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`vite preview exited early with code ${child.exitCode}`);
    try {
      const res = await fetch(url);
      if (res.ok) return;
      last = new Error(`HTTP ${res.status}`);
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`vite preview did not answer at ${url} within ${timeoutMs} ms: ${last}`);
}

/** Starts `vite preview` for web/dist; throws if the build is missing or the server does not come up. */
export async function startPreview({ timeoutMs = 20000 } = {}) {
  if (!existsSync(distIndex)) {
    throw new Error('web/dist/index.html is missing: run `npm run build:web` (after `npm run build:wasm`) first');
  }
  if (!existsSync(viteBin)) throw new Error('node_modules/.bin/vite is missing: run `npm ci` first');
  const port = await freePort();
  const child = spawn(
    viteBin,
    ['preview', '--config', 'web/vite.config.ts', '--host', '127.0.0.1', '--port', String(port), '--strictPort'],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  const url = `http://127.0.0.1:${port}/`;
  try {
    await waitForHttp(url, child, timeoutMs);
  } catch (e) {
    child.kill('SIGTERM');
    throw new Error(`${e.message}\n--- vite output ---\n${log}`);
  }
  return {
    url,
    log: () => log,
    close: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

/** The built wasm core in node (wasm/dist), e.g. to read its registries: `(await loadCore()).scoreFunctions`. */
export async function loadCore() {
  const { loadQkScope } = await import(fileURLToPath(new URL('../../wasm/qkscope.js', import.meta.url)));
  return loadQkScope({ wasmBinary: await readFile(fileURLToPath(new URL('../../wasm/dist/qkscope_core.wasm', import.meta.url))) });
}

/**
 * Headless Debian Chromium with the flags every browser run here uses (no GPU, no background
 * traffic), plus `extraArgs`.
 */
export async function launchChromium(extraArgs = []) {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', ...extraArgs],
  });
}

/** Content types of what the tests and benchmarks serve (anything else: application/octet-stream). */
export const MIME = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css',
  '.wasm': 'application/wasm', '.json': 'application/json', '.svg': 'image/svg+xml', '.woff2': 'font/woff2',
  '.ico': 'image/x-icon', '.png': 'image/png',
};

/** COOP / COEP: a page served with them is cross-origin isolated (performance.now() at microsecond grain, SharedArrayBuffer). */
export const ISOLATION_HEADERS = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

/**
 * A static server on a free localhost port. `route(path)` gets each request's decoded,
 * normalised path ('/a/b.js') and returns a file to send, `{ body, type }` to send as it is,
 * `{ status }` for an empty answer (204 for a favicon), or null: 404 "not found", as for a file
 * that cannot be read. `headers` go on every answer (a CSP, or COOP / COEP for a cross-origin
 * isolated page). Resolves to { url: 'http://127.0.0.1:PORT/', origin, close() }.
 */
export async function serveFiles(route, { headers = {} } = {}) {
  const server = createHttpServer(async (req, res) => {
    let path;
    try {
      path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname));
    } catch {
      return res.writeHead(400, headers).end();  // a malformed %-escape
    }
    const hit = route(path);
    if (hit && typeof hit === 'object' && 'status' in hit) return res.writeHead(hit.status, headers).end();
    try {
      if (!hit) throw new Error('no route');
      const body = typeof hit === 'string' ? await readFile(hit) : hit.body;
      const type = typeof hit === 'string' ? MIME[extname(hit)] : hit.type;
      res.writeHead(200, { ...headers, 'content-type': type ?? 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404, headers).end('not found');
    }
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${server.address().port}`;
  return { url: `${origin}/`, origin, close: () => new Promise((r) => server.close(() => r())) };
}

/** A route for serveFiles: the files under `dir` ('/' is its index.html); null for any path outside it. */
export function underDir(dir, index = 'index.html') {
  const base = resolvePath(dir);
  return (path) => {
    const file = join(base, path === '/' ? index : path);
    return file.startsWith(base + sep) ? file : null;
  };
}
