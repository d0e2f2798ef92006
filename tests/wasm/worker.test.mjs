// The tutorial's worker (web/src/worker/): the request handler run against the real module,
// and the client over an in-process port (a MessageChannel standing in for the Worker):
// results and timings come back, bad input rejects with forward()'s RangeError and the worker
// stays usable, and requests on a channel are coalesced (stale ones reject with AbortError,
// never run). The TypeScript sources are compiled with the project's tsc into a temp folder.
// The real Worker in Chromium is exercised by tests/e2e/ch7.test.mjs (chapter 7's timings).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { X, load } from './helpers.mjs';
import { base, rangeErrors } from './bad-inputs.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const out = mkdtempSync(join(tmpdir(), 'qkscope-worker-'));
after(() => rmSync(out, { recursive: true, force: true }));
// Each file compiled on its own (imports between them are type-only or rewritten below).
execFileSync(join(root, 'node_modules/.bin/tsc'), [
  '--outDir', out, '--rootDir', join(root, 'web/src/worker'), '--module', 'esnext', '--target', 'es2022',
  '--ignoreConfig', '--moduleResolution', 'bundler', '--noCheck', '--skipLibCheck', '--verbatimModuleSyntax',
  join(root, 'web/src/worker/handler.ts'), join(root, 'web/src/worker/coalesce.ts'),
], { stdio: 'pipe' });
const { handle, transferables } = await import(pathToFileURL(join(out, 'handler.js')).href);
const { Coalescer, StaleRequestError } = await import(pathToFileURL(join(out, 'coalesce.js')).href);

const qk = await load();
const now = () => performance.now();
let id = 0;
const call = (method, args) => handle({ id: ++id, kind: 'call', method, args }, qk, now);

describe('handler', () => {
  test('forward and attention come back with the module\'s results', async () => {
    const f = await call('forward', [base()]);
    assert.equal(f.ok, true);
    assert.deepEqual(f.value.output, qk.forward(base()).output);
    const a = await call('attention', [base()]);
    assert.equal(a.ok, true);
    assert.equal(a.value.tiled, true);
    assert.deepEqual(a.value.output, (await qk.attention(base())).output);
  });

  test('bad input: the RangeError of forward, by name and message; the handler stays usable', async () => {
    for (const [what, options] of rangeErrors) {
      let expected;
      try { qk.forward(options); } catch (e) { expected = e; }
      for (const method of ['forward', 'attention']) {
        const r = await call(method, [options]);
        assert.equal(r.ok, false, `${what}: ${method} must fail`);
        assert.deepEqual(r.error, { name: 'RangeError', message: expected.message }, `${what}: ${method}`);
      }
    }
    assert.equal((await call('forward', [base()])).ok, true);
    const r = await call('eval', ['1']);
    assert.deepEqual([r.ok, r.error.name], [false, 'RangeError'], 'only the QkScope methods');
    assert.match(r.error.message, /unknown method 'eval'/);
  });

  test('time: one warm-up and reps timed calls inside the handler; one call when the warm-up is slow', async () => {
    for (const method of ['forward', 'attention']) {
      const r = await handle({ id: ++id, kind: 'time', method, args: [base()], reps: 4, slowMs: 1e9 }, qk, now);
      assert.equal(r.ok, true, JSON.stringify(r.error));
      assert.equal(r.value.times.length, 4);
      for (const t of [r.value.warm, ...r.value.times]) assert.ok(Number.isFinite(t) && t >= 0);
    }
    // bytes: what one call handed back, counted from the result's typed arrays.
    const [f, a] = [qk.forward(base()), (await qk.tiled()).attention(base())];
    const sum = (o) => (ArrayBuffer.isView(o) ? o.byteLength : o && typeof o === 'object' ? Object.values(o).reduce((n, v) => n + sum(v), 0) : 0);
    for (const [method, res] of [['forward', f], ['attention', a]]) {
      const r = await handle({ id: ++id, kind: 'time', method, args: [base()], reps: 1, slowMs: 1e9 }, qk, now);
      assert.equal(r.value.bytes, sum(res), method);
    }
    assert.ok(sum(f) >= 4 * 4 * f.weights.rows * f.weights.cols, 'forward returns four (L_q, L_k) float32 copies');
    let clock = 0;
    const slow = await handle({ id: ++id, kind: 'time', method: 'forward', args: [base()], reps: 4, slowMs: 30 },
      qk, () => (clock += 20));
    assert.equal(slow.value.times.length, 1, 'a warm-up over slowMs / 3 gives one timed call');
    const bad = await handle({ id: ++id, kind: 'time', method: 'forward', args: [{ ...base(), temperature: 0 }], reps: 2, slowMs: 1e9 }, qk, now);
    assert.equal(bad.error.name, 'RangeError');
    const reps = await handle({ id: ++id, kind: 'time', method: 'forward', args: [base()], reps: 0, slowMs: 1e9 }, qk, now);
    assert.match(reps.error.message, /reps must be an integer >= 1/);
  });

  test('transferables: every result buffer once', async () => {
    const f = (await call('forward', [base()])).value;
    const bufs = transferables(f);
    assert.ok(bufs.includes(f.output.data.buffer) && bufs.includes(f.weights.data.buffer));
    assert.equal(new Set(bufs).size, bufs.length);
  });
});

describe('coalescing', () => {
  /** A request that resolves when told to; records that it started. */
  function deferred(log, name) {
    let resolve;
    const p = new Promise((r) => (resolve = r));
    return { start: () => (log.push(name), p), resolve };
  }

  test('while one request runs, newer ones replace the waiting one; stale ones never start', async () => {
    const c = new Coalescer();
    const log = [];
    const a = deferred(log, 'a'), b = deferred(log, 'b'), d = deferred(log, 'd');
    const pa = c.submit('s', a.start);
    const pb = c.submit('s', b.start);
    const pd = c.submit('s', d.start);
    assert.deepEqual(log, ['a'], 'only the first runs');
    assert.equal(c.pending('s'), 1);
    await assert.rejects(pb, (e) => e instanceof StaleRequestError && e.name === 'AbortError');
    a.resolve(1);
    assert.equal(await pa, 1);
    await new Promise((r) => setTimeout(r, 0));
    assert.deepEqual(log, ['a', 'd'], 'b was dropped, d ran next');
    d.resolve(3);
    assert.equal(await pd, 3);
    assert.equal(c.pending('s'), 0);
  });

  test('channels are independent; no channel means no coalescing; a failure frees the channel', async () => {
    const c = new Coalescer();
    const log = [];
    const a = deferred(log, 'a'), b = deferred(log, 'b');
    c.submit('x', a.start);
    c.submit('y', b.start);
    const free = [c.submit(undefined, async () => 1), c.submit(undefined, async () => 2)];
    assert.deepEqual(await Promise.all(free), [1, 2]);
    assert.deepEqual(log, ['a', 'b']);
    const failing = c.submit('z', () => { throw new RangeError('bad'); });
    await assert.rejects(failing, RangeError);
    assert.equal(await c.submit('z', async () => 'next'), 'next');
  });

  test('the client over a MessageChannel: results, RangeErrors and coalescing end to end', async () => {
    execFileSync(join(root, 'node_modules/.bin/tsc'), [
      '--outDir', out, '--rootDir', join(root, 'web/src/worker'), '--module', 'esnext', '--target', 'es2022',
      '--ignoreConfig', '--moduleResolution', 'bundler', '--noCheck', '--skipLibCheck', '--verbatimModuleSyntax',
      join(root, 'web/src/worker/client.ts'),
    ], { stdio: 'pipe' });
    const { readFileSync, writeFileSync } = await import('node:fs');
    // client.ts imports './coalesce' (bundler style); point it at the compiled file.
    const js = readFileSync(join(out, 'client.js'), 'utf8').replace(/from '\.\/coalesce'/, "from './coalesce.js'");
    writeFileSync(join(out, 'client.js'), js);
    const { QkWorker } = await import(pathToFileURL(join(out, 'client.js')).href);
    const { port1, port2 } = new MessageChannel();
    let served = 0;
    port2.onmessage = async (e) => {
      served++;
      const res = await handle(e.data, qk, now);
      port2.postMessage(res, transferables(res.ok ? res.value : null));
    };
    const w = new QkWorker({
      postMessage: (m) => port1.postMessage(m),
      addEventListener: (type, l) => (type === 'message' ? (port1.onmessage = l) : undefined),
    });
    const r = await w.call('forward', [base()]);
    assert.deepEqual(r.output, qk.forward(base()).output);
    await assert.rejects(w.call('attention', [{ ...base(), temprature: 1 }]),
      (e) => e instanceof RangeError && /unknown option 'temprature'/.test(e.message));
    const t = await w.time('attention', [base()], 3, 1e9);
    assert.equal(t.times.length, 3);
    served = 0;
    const calls = [1, 2, 3, 4, 5].map((k) => w.call('forward', [{ ...base(), temperature: k }], 'slider'));
    const settled = await Promise.allSettled(calls);
    assert.deepEqual(settled.map((s) => s.status), ['fulfilled', 'rejected', 'rejected', 'rejected', 'fulfilled']);
    assert.equal(served, 2, 'the three stale requests never reached the worker');
    assert.deepEqual(settled[4].value.output, qk.forward({ ...base(), temperature: 5 }).output);
    port1.close();
  });
});
