// The tutorial's worker (web/src/worker/): the request handler run against the real module:
// results and timings come back, bad input rejects with forward()'s RangeError and the worker
// stays usable (coalescing and the client over a port: worker-coalesce.test.mjs). The
// TypeScript sources are compiled with the project's tsc (worker-build.mjs).
// The training channel (train-runs.ts) is driven with the real training module: runs live
// between requests, steps keep to their budget, bad options reject with the core's RangeError.
// The real Worker in Chromium is exercised by tests/e2e/ch7.test.mjs (chapter 7's timings)
// and tests/e2e/ch11.test.mjs (chapter 11's training).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';

import { X, load } from './helpers.mjs';
import { base, rangeErrors } from './bad-inputs.mjs';
import { JOB_NAMES, handle, out, transferables } from './worker-build.mjs';

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

describe('jobs: the tutorial\'s own long computations in the worker (jobs.ts)', () => {
  const job = (name, args) => handle({ id: ++id, kind: 'job', job: name, args }, qk, now);
  const ch3 = () => import(pathToFileURL(join(out, 'chapters/ch3-scaling/model.js')).href);
  const ch7 = () => import(pathToFileURL(join(out, 'chapters/ch7-cost/model.js')).href);
  const mat = (rows, cols, seed) => ({ rows, cols, data: Float32Array.from({ length: rows * cols }, (_, k) => Math.sin(seed * 7.1 + k * 1.3)) });
  const additive = (Lq, Lk, d, dh) => {
    const p = qk.initParams('additive', d, d, dh, 0);
    return { Q: mat(Lq, d, 1), K: mat(Lk, d, 2), V: mat(Lk, 3, 3), p: { W_q: p.W_q, W_k: p.W_k, v: p.v, b: p.b }, params: p };
  };

  test('the job table is what the worker knows; an unknown job is a RangeError naming the known ones', async () => {
    assert.deepEqual([...JOB_NAMES].sort(), ['broadcastAdditive', 'favorCurve', 'saturation', 'variance', 'windowCurve']);
    const r = await job('nope', []);
    assert.equal(r.ok, false);
    assert.equal(r.error.name, 'RangeError');
    assert.match(r.error.message, /unknown job 'nope' \(known: broadcastAdditive, saturation, favorCurve, windowCurve, variance\)/);
    const t = await handle({ id: ++id, kind: 'time', method: 'nope', args: [], reps: 1, slowMs: 100 }, qk, now);
    assert.equal(t.ok, false);
    assert.match(t.error.message, /cannot time 'nope'/);
  });

  test('broadcastAdditive: the same numbers as on the page, the core\'s scores (L_q != L_k, length 1), timed by name', async () => {
    const { broadcastAdditive } = await ch7();
    for (const [Lq, Lk, d, dh] of [[5, 7, 4, 3], [1, 9, 2, 5], [6, 1, 3, 2]]) {
      const a = additive(Lq, Lk, d, dh);
      const r = await job('broadcastAdditive', [a.Q, a.K, a.V, a.p]);
      assert.equal(r.ok, true, r.error?.message);
      const here = broadcastAdditive(a.Q, a.K, a.V, a.p);
      assert.deepEqual(r.value.scores, here.scores);
      assert.deepEqual(r.value.output, here.output);
      assert.equal(r.value.tensorBytes, 2 * Lq * Lk * dh * 4);
      const core = qk.forward({ query: a.Q, key: a.K, value: a.V, score: 'additive', params: a.params });
      const diff = Math.max(...r.value.scores.data.map((x, k) => Math.abs(x - core.rawScores.data[k])));
      assert.ok(diff < 1e-5, `broadcast scores = core additive scores at ${Lq}x${Lk} (max |diff| ${diff})`);
    }
    const a = additive(8, 8, 4, 3);
    const t = await handle({ id: ++id, kind: 'time', method: 'broadcastAdditive', args: [a.Q, a.K, a.V, a.p], reps: 3, slowMs: 1000 }, qk, now);
    assert.equal(t.ok, true);
    assert.equal(t.value.times.length, 3);
    assert.equal(t.value.bytes, 4 * (8 * 8 + 8 * 3), 'bytes handed back: scores and output');
  });

  test('broadcastAdditive: bad input rejects with a RangeError naming the argument; the handler stays usable', async () => {
    const a = additive(3, 4, 2, 2);
    const cases = [
      [[{ rows: 3, cols: 2, data: new Float32Array(5) }, a.K, a.V, a.p], /query must be \{ rows, cols, data \}/],
      [[a.Q, null, a.V, a.p], /key must be/],
      [[a.Q, a.K, { rows: 3, cols: 3, data: new Float32Array(9) }, a.p], /shapes disagree/],
      [[a.Q, a.K, a.V], /params \{ W_q, W_k, v, b \} are required/],
      [[a.Q, a.K, a.V, { ...a.p, v: new Float32Array(7) }], /shapes disagree/],
      [[a.Q, a.K, a.V, { ...a.p, W_q: 'x' }], /params\.W_q must be/],
      [[{ rows: 2 ** 15, cols: 1, data: new Float32Array(2 ** 15) }, { rows: 2 ** 15, cols: 1, data: new Float32Array(2 ** 15) }, { rows: 2 ** 15, cols: 1, data: new Float32Array(2 ** 15) }, (() => { const p = qk.initParams('additive', 1, 1, 2, 0); return { W_q: p.W_q, W_k: p.W_k, v: p.v, b: p.b }; })()], /over 2\^28/],
    ];
    for (const [args, re] of cases) {
      const r = await job('broadcastAdditive', args);
      assert.equal(r.ok, false);
      assert.equal(r.error.name, 'RangeError');
      assert.match(r.error.message, re);
    }
    assert.equal((await job('broadcastAdditive', [a.Q, a.K, a.V, a.p])).ok, true);
  });

  test('saturation: the same curves as on the page; bad seed or L_k rejects', async () => {
    const { saturation } = await ch3();
    const r = await job('saturation', [3, 5]);
    assert.equal(r.ok, true, r.error?.message);
    assert.deepEqual(r.value, saturation(qk, 3, 5));
    for (const sc of ['none', 'sqrt', 'd'])
      for (const p of r.value[sc]) assert.ok(p.maxWeight >= 1 / 5 - 1e-6 && p.maxWeight <= 1 && p.jacobian >= 0, `${sc} d = ${p.d}`);
    for (const [args, re] of [[[-1, 5], /seed must be an integer >= 0/], [[1, 0], /lk \(L_k\) must be an integer in \[1, 4096\]/], [[1, 2.5], /lk/], [[1, 1e9], /lk/], [['x', 4], /seed/]]) {
      const bad = await job('saturation', args);
      assert.equal(bad.ok, false);
      assert.equal(bad.error.name, 'RangeError');
      assert.match(bad.error.message, re);
    }
  });

  test('favorCurve: chapter 8\'s FAVOR+ error curve, the same as on the page; bad seed, sigma or causal rejects', async () => {
    const { favorErrorCurve, CURVE_M } = await import(pathToFileURL(join(out, 'chapters/ch8-beyond/model.js')).href);
    for (const [seed, sigma, causal] of [[1, 0.5, false], [7, 2, true]]) {
      const r = await job('favorCurve', [seed, sigma, causal]);
      assert.equal(r.ok, true, r.error?.message);
      assert.deepEqual(r.value, favorErrorCurve(qk, seed, sigma, causal));
      assert.deepEqual(r.value.map((p) => p.m), CURVE_M);
      assert.ok(r.value.every((p) => Number.isFinite(p.err) && p.err > 0), 'finite, positive errors');
      // Peaky weights (sigma 2) keep FAVOR+'s variance high even at m = 4096 (0.26 against 0.62).
      const by = sigma < 1 ? 4 : 2;
      assert.ok(r.value.at(-1).err < r.value[0].err / by, `m = 4096 (${r.value.at(-1).err}) below m = 4 (${r.value[0].err}) / ${by}`);
    }
    for (const [args, re] of [[[-1, 0.5, false], /seed must be an integer >= 0/], [[1, 0, false], /sigma must be a number in \(0, 16\]/], [[1, NaN, false], /sigma/], [[1, '0.5', false], /sigma/], [[1, 0.5, 1], /causal must be a boolean/]]) {
      const bad = await job('favorCurve', args);
      assert.equal(bad.ok, false);
      assert.equal(bad.error.name, 'RangeError');
      assert.match(bad.error.message, re);
    }
    assert.equal((await job('favorCurve', [1, 0.5, false])).ok, true, 'usable after bad input');
  });

  test('windowCurve: chapter 8\'s window + global + random curve, the same as on the page; bad seed, g or r rejects', async () => {
    const { windowCurve, sparseBase, sparseEval, SPARSE_L } = await import(pathToFileURL(join(out, 'chapters/ch8-beyond/model.js')).href);
    for (const [seed, g, r] of [[1, 1, 0], [5, 0, 3], [2, 4, 4]]) {
      const res = await job('windowCurve', [seed, g, r]);
      assert.equal(res.ok, true, res.error?.message);
      assert.deepEqual(res.value, windowCurve(qk, seed, g, r));
      assert.equal(res.value.length, SPARSE_L, 'w = 0 ... L - 1');
      // Each point is the page's evaluation of that w (Figure 8.3 draws the current one itself).
      const b = sparseBase(qk, seed);
      for (const w of [0, 7, SPARSE_L - 1]) {
        const e = sparseEval(qk, b, 'window', 1, w, g, r);
        assert.deepEqual(res.value[w], { kept: e.kept, err: e.err });
      }
      for (let w = 1; w < SPARSE_L; w++) assert.ok(res.value[w].kept >= res.value[w - 1].kept, 'a wider window keeps more pairs');
      assert.equal(res.value.at(-1).kept, 1, 'the full window keeps every pair');
      assert.ok(res.value.at(-1).err < 1e-6, 'and is plain softmax');
    }
    for (const [args, re] of [[[-1, 1, 0], /seed must be an integer >= 0/], [[1, -1, 0], /g must be an integer in \[0, 16\]/], [[1, 1.5, 0], /g must/], [[1, 0, 17], /r must be an integer in \[0, 16\]/], [[1, 0, '2'], /r must/]]) {
      const bad = await job('windowCurve', args);
      assert.equal(bad.ok, false);
      assert.equal(bad.error.name, 'RangeError');
      assert.match(bad.error.message, re);
    }
    assert.equal((await job('windowCurve', [1, 1, 0])).ok, true, 'usable after bad input');
  });

  test('variance: a named run advances request by request and ends with the page\'s numbers; a new seed restarts it', async () => {
    const { VarianceRun } = await ch3();
    const step = (seed, budgetMs) => job('variance', [{ run: 'test', seed, pairs: 5000, budgetMs }]);
    const first = await step(11, 0);  // budget 0: one batch
    assert.equal(first.ok, true, first.error?.message);
    assert.equal(first.value.finished, false);
    const second = await step(11, 0);
    assert.ok(second.value.rows.reduce((n, r) => n + r.raw.n, 0) > first.value.rows.reduce((n, r) => n + r.raw.n, 0), 'the run continued');
    let last = second;
    while (!last.value.finished) last = await step(11, 50);
    const here = new VarianceRun(qk, 11, 5000);
    here.run();
    assert.equal(last.value.pairs, here.pairs);
    last.value.rows.forEach((r, k) => {
      assert.equal(r.d, here.rows[k].d);
      assert.deepEqual(r.raw, here.rows[k].raw.state());
      assert.deepEqual(r.scaled, here.rows[k].scaled.state());
      assert.deepEqual(r.byD, here.rows[k].byD.state());
    });
    // Var(q.k) ~ d_k, Var(q.k / sqrt(d_k)) ~ 1 (docs/facts.md §3): 5120 pairs, within 15%.
    const { Moments } = await ch3();
    for (const r of last.value.rows) {
      assert.ok(Math.abs(Moments.from(r.raw).variance() / r.d - 1) < 0.15, `Var(q.k) at d = ${r.d}`);
      assert.ok(Math.abs(Moments.from(r.scaled).variance() - 1) < 0.15, `Var(q.k / sqrt d) at d = ${r.d}`);
    }
    const restarted = await step(12, 0);
    assert.equal(restarted.value.finished, false, 'a new seed starts a new run');
    for (const [arg, re] of [[{ run: 'x', seed: -1, pairs: 10, budgetMs: 1 }, /seed/], [{ run: 'x', seed: 1, pairs: 0, budgetMs: 1 }, /pairs/], [{ run: 'x', seed: 1, pairs: 10, budgetMs: NaN }, /budgetMs/], [null, /expected \{ run, seed, pairs, budgetMs \}/]]) {
      const bad = await job('variance', [arg]);
      assert.equal(bad.ok, false);
      assert.equal(bad.error.name, 'RangeError');
      assert.match(bad.error.message, re);
    }
  });
});
