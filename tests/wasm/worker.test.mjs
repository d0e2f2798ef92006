// The tutorial's worker (web/src/worker/): the request handler run against the real module,
// and the client over an in-process port (a MessageChannel standing in for the Worker):
// results and timings come back, bad input rejects with forward()'s RangeError and the worker
// stays usable, and requests on a channel are coalesced (stale ones reject with AbortError,
// never run). The TypeScript sources are compiled with the project's tsc into a temp folder.
// The training channel (train-runs.ts) is driven with the real training module: runs live
// between requests, steps keep to their budget, bad options reject with the core's RangeError.
// The real Worker in Chromium is exercised by tests/e2e/ch7.test.mjs (chapter 7's timings)
// and tests/e2e/ch11.test.mjs (chapter 11's training).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { readFileSync, writeFileSync } from 'node:fs';
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
  join(root, 'web/src/worker/handler.ts'), join(root, 'web/src/worker/coalesce.ts'), join(root, 'web/src/worker/train-runs.ts'),
  join(root, 'web/src/worker/char-models.ts'),
], { stdio: 'pipe' });
// handler.ts imports './train-runs' (bundler style); point it at the compiled file.
writeFileSync(join(out, 'handler.js'), readFileSync(join(out, 'handler.js'), 'utf8').replace(/from '\.\/train-runs'/, "from './train-runs.js'"));
writeFileSync(join(out, 'train-runs.js'), readFileSync(join(out, 'train-runs.js'), 'utf8').replace(/from '\.\/char-models'/, "from './char-models.js'"));
const { handle, transferables } = await import(pathToFileURL(join(out, 'handler.js')).href);
const { Coalescer, StaleRequestError } = await import(pathToFileURL(join(out, 'coalesce.js')).href);

const qk = await load();
await qk.train({ wasmBinary: readFileSync(new URL('../../wasm/dist/qkscope_train.wasm', import.meta.url)) });
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

describe('training channel', () => {
  const train = (op) => handle({ id: ++id, kind: 'train', op }, qk, now);
  const view = { example: 0, layer: 0, head: 0 };
  const options = { task: 'reverse', score: 'scaled_dot', length: 8, width: 16, batch: 16, lr: 0.02, seed: 7 };

  test('tasks, create, step in chunks with evaluations on multiples, view and drop', async () => {
    const tasks = await train({ op: 'tasks' });
    assert.deepEqual(tasks.value.map((t) => t.name), (await qk.train()).tasks.map((t) => t.name));
    const c = await train({ op: 'create', run: 'a', options, view });
    assert.equal(c.ok, true);
    assert.deepEqual([c.value.steps, c.value.evals.length, c.value.evals[0].step], [0, 1, 0]);
    assert.deepEqual([c.value.attention.rows, c.value.attention.cols, c.value.tokens.length], [8, 8, 8]);
    const s = await train({ op: 'step', run: 'a', steps: 30, evalEvery: 10, budgetMs: 1e9, view });
    assert.equal(s.ok, true);
    assert.deepEqual([s.value.steps, s.value.losses.length, s.value.evals.map((e) => e.step)], [30, 30, [10, 20, 30]]);
    assert.ok(s.value.stepMs > 0);
    // The same run as the module's own: the worker adds nothing to the arithmetic.
    const t = (await qk.train()).createTrainer(options);
    try {
      assert.deepEqual(Array.from(s.value.losses), Array.from(t.step(30)));
    } finally {
      t.delete();
    }
    const tight = await train({ op: 'step', run: 'a', steps: 1000, evalEvery: 1000, budgetMs: 0.001, view });
    assert.deepEqual([tight.value.steps, tight.value.losses.length], [31, 1], 'the budget stops after one step');
    const v = await train({ op: 'view', run: 'a', view: { ...view, example: 3 } });
    assert.deepEqual([v.value.steps, v.value.losses.length], [31, 0]);
    assert.equal((await train({ op: 'drop' })).ok, true);
    const gone = await train({ op: 'step', run: 'a', steps: 1, evalEvery: 1, budgetMs: 1e9, view });
    assert.deepEqual([gone.ok, gone.error.name], [false, 'RangeError']);
  });

  test('bad options and steps reject with the core\'s RangeError; a failed create keeps the old run', async () => {
    await train({ op: 'create', run: 'b', options, view });
    for (const lr of [-1, 0, NaN]) {
      const r = await train({ op: 'check', options: { ...options, lr } });
      assert.equal(r.error.name, 'RangeError');
      assert.match(r.error.message, /lr \(learning rate\) must be finite and > 0/);
    }
    assert.equal((await train({ op: 'check', options })).ok, true);
    const bad = await train({ op: 'create', run: 'b', options: { ...options, task: 'sort' }, view });
    assert.match(bad.error.message, /unknown task 'sort'/);
    const zero = await train({ op: 'step', run: 'b', steps: 0, evalEvery: 1, budgetMs: 1e9, view });
    assert.match(zero.error.message, /steps must be an integer >= 1, got 0/);
    assert.equal((await train({ op: 'step', run: 'b', steps: 2, evalEvery: 1, budgetMs: 1e9, view })).value.steps, 2);
    await train({ op: 'drop', run: 'b' });
  });
});

describe('character models on the training channel', () => {
  const train = (op) => handle({ id: ++id, kind: 'train', op }, qk, now);
  const weights = JSON.parse(readFileSync(new URL('../../web/public/train-models/devil-scaled_dot.json', import.meta.url), 'utf8'));

  test('charLoad then charPredict: every head of every layer, the same numbers as the module', async () => {
    const info = await train({ op: 'charLoad', key: 'scaled_dot', weights });
    assert.equal(info.ok, true, JSON.stringify(info.error));
    assert.deepEqual([info.value.score, info.value.context, info.value.vocabulary], [weights.score, weights.context, weights.vocabulary]);
    const r = await train({ op: 'charPredict', key: 'scaled_dot', text: 'The cynic is a blackguard' });
    assert.equal(r.ok, true);
    const n = r.value.text.length;
    assert.deepEqual([r.value.next.rows, r.value.next.cols], [n, weights.vocabulary.length]);
    assert.equal(r.value.attention.length, weights.layers * weights.heads);
    const m = (await qk.train()).loadCharModel(weights);
    try {
      const p = m.predict('The cynic is a blackguard');
      assert.deepEqual(r.value.next.data, p.next.data);
      assert.deepEqual(r.value.attention[weights.heads + 1].data, p.attention(1, 1).data, 'layer-major order');
    } finally {
      m.delete();
    }
    const bad = await train({ op: 'charLoad', key: 'x', weights: { ...weights, version: 9 } });
    assert.deepEqual([bad.ok, bad.error.name], [false, 'RangeError']);
    const missing = await train({ op: 'charPredict', key: 'x', text: 'a' });
    assert.match(missing.error.message, /no character model 'x'/);
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
