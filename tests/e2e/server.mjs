// tests/e2e/server.mjs — starts `vite preview` on the static build (web/dist) on a free
// port, waits until it answers, and returns { url, close }. Used by the e2e tests:
//   const server = await startPreview(); ... after(() => server.close());
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { readFile } from 'node:fs/promises';
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

/** Headless Debian Chromium with the flags every browser run here uses (no GPU, no background traffic). */
export async function launchChromium() {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
