// attention() / attentionBackward(): the tiled SIMD kernels (wasm/tiled/bindings.cpp) against
// the double reference under the project's one tolerance rule (helpers.mjs,
// assertMatchesReference), next to forward() / backward() on the same options: every
// registered scoring function (from the module's own registry, each one must run tiled),
// L_q != L_k, length 1, odd sizes and several tiles (64 x 256), every mask kind with fully
// masked rows, each bias, temperature and scale.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { assertMatchesReference, load, loadReference, randomMatrix } from './helpers.mjs';

// Loaded before any test is declared (node:test starts the run at the first declaration).
const qk = await load();
const tiled = await qk.tiled();
const ref = await loadReference();
// The tiled module's own registry: one suite per scoring function.
const scores = tiled.scoreFunctions;

/** Seeded inputs: Q (L_q, d_q), K (L_k, d_k), V (L_k, d_v). */
function inputs(Lq, Lk, dq, dk, dv, seed) {
  return { query: randomMatrix(Lq, dq, seed), key: randomMatrix(Lk, dk, seed + 1), value: randomMatrix(Lk, dv, seed + 2) };
}

/** attention and forward on `o`, both held to the reference; returns the fast result. */
function checkForward(o, what, { mustTile = true } = {}) {
  const fast = tiled.attention(o);
  const full = qk.forward(o);
  const r = ref.reference(o);
  if (mustTile) assert.equal(fast.tiled, true, `${what}: attention deferred to the core`);
  assert.equal(fast.output.rows, full.output.rows);
  assert.equal(fast.output.cols, full.output.cols);
  assert.equal(fast.scale, full.scale, `${what}: scale`);
  assertMatchesReference(fast.output.data, r.naiveOutput, r.output, `${what}: attention output`);
  assertMatchesReference(fast.logsumexp, r.naiveLogsumexp, r.logsumexp, `${what}: attention logsumexp`);
  assertMatchesReference(full.output.data, r.naiveOutput, r.output, `${what}: forward output`);
  assertMatchesReference(full.logsumexp, r.naiveLogsumexp, r.logsumexp, `${what}: forward logsumexp`);
  assert.deepEqual(Object.keys(fast).sort(), ['logsumexp', 'output', 'params', 'scale', 'tiled'],
    'no (L_q, L_k) intermediates');
  return fast;
}

/** attentionBackward and backward on `o`, both held to the core's double backward. */
function checkBackward(o, what, { mustTile = true } = {}) {
  const G = randomMatrix(o.query.length, o.value[0].length, 99);
  const fast = tiled.attentionBackward(o, G);
  const core = qk.backward(o, G);
  const { ref: g64, naive } = ref.referenceBackward(o, G);
  assert.equal(fast.tiled, mustTile, `${what}: attentionBackward tiled`);
  const pairs = [['dQuery', 'dQuery'], ['dKey', 'dKey'], ['dValue', 'dValue']];
  for (const [js, r] of pairs) {
    assertMatchesReference(fast[js].data, naive[r], g64[r], `${what}: attentionBackward ${js}`);
    assertMatchesReference(core[js].data, naive[r], g64[r], `${what}: backward ${js}`);
  }
  assert.deepEqual(Object.keys(fast.dParams).sort(), Object.keys(core.dParams).sort(), `${what}: dParams fields`);
  for (const k of Object.keys(core.dParams)) {
    const data = fast.dParams[k].data ?? fast.dParams[k];
    assertMatchesReference(data, naive[`d${k}`], g64[`d${k}`], `${what}: attentionBackward dParams.${k}`);
  }
  assertMatchesReference([fast.dTemperature], [naive.dTemperature], [g64.dTemperature], `${what}: dTemperature`);
  for (const k of ['dBias', 'dRelativeBias', 'dT5Table']) {
    assert.equal(k in fast, k in core, `${what}: ${k} present in both or neither`);
    if (k in fast) assertMatchesReference(fast[k].data ?? fast[k], naive[k], g64[k], `${what}: ${k}`);
  }
}

// Shapes: L_q != L_k, length 1, odd widths, and sizes past one 64-query tile / 256-key block.
const shapes = [
  { Lq: 5, Lk: 7, d: 5, dv: 3 },
  { Lq: 1, Lk: 1, d: 3, dv: 2 },
  { Lq: 70, Lk: 300, d: 7, dv: 5 },
];

test('the tiled module reports the same registry and version as the core module', () => {
  assert.deepEqual(tiled.scoreFunctions.map((s) => s.name), qk.scoreFunctions.map((s) => s.name));
  assert.equal(tiled.version, qk.version);
});

for (const info of scores) {
  describe(`score '${info.name}'`, () => {
    const dims = (s) => (info.sameDim ? [s.d, s.d] : [s.d, s.d + 2]);
    test('forward: shapes, on the tiled path, within the rule of the double reference', () => {
      for (const [n, s] of shapes.entries()) {
        const [dq, dk] = dims(s);
        checkForward({ ...inputs(s.Lq, s.Lk, dq, dk, s.dv, 10 * n + 1), score: info.name, seed: 3 },
          `${info.name} ${s.Lq}x${s.Lk}`);
      }
    });
    test('forward: masks (causal both alignments, padding, window, keep with fully masked rows)', () => {
      const [dq, dk] = dims(shapes[0]);
      const o = { ...inputs(6, 9, dq, dk, 4, 7), score: info.name, seed: 5 };
      const keep = Array.from({ length: 6 }, (_, i) => Array.from({ length: 9 }, (_, j) => i !== 2 && (i + j) % 3 !== 0));
      const cases = {
        causal: { causal: true },
        'causal bottom_right': { causal: true, causalAlignment: 'bottom_right' },
        padding: { keyLength: 4 },
        'padding 0 (every row masked)': { keyLength: 0 },
        window: { window: { left: 2, right: 1 } },
        'keep mask, row 2 fully masked': { mask: keep },
      };
      for (const [name, extra] of Object.entries(cases)) {
        const fast = checkForward({ ...o, ...extra }, `${info.name} ${name}`);
        if (name.startsWith('keep')) assert.equal(fast.logsumexp[2], -Infinity, 'fully masked row: logsumexp -Infinity');
      }
    });
    test('forward: biases, temperature and scale', () => {
      const [dq, dk] = dims(shapes[0]);
      const o = { ...inputs(5, 8, dq, dk, 3, 21), score: info.name, seed: 9 };
      const dense = randomMatrix(5, 8, 4);
      dense[1][3] = -Infinity;
      const cases = {
        ALiBi: { alibiSlope: 0.5 },
        relative: { relativeBias: [0.3, -0.2, 0.1, 0.4, -0.5] },
        T5: { t5: { numBuckets: 6, maxDistance: 10, bidirectional: true }, t5Table: [0.1, -0.3, 0.2, 0.5, -0.1, 0.05] },
        dense: { bias: dense },
        softcap: { softcap: 2 },
        'temperature 0.5': { temperature: 0.5 },
        'temperature 3, scale 0.7': { temperature: 3, scale: 0.7 },
      };
      for (const [name, extra] of Object.entries(cases)) checkForward({ ...o, ...extra }, `${info.name} ${name}`);
    });
    test('backward: gradients within the rule of the double core, next to backward()', () => {
      const [dq, dk] = dims(shapes[0]);
      const o = { ...inputs(6, 9, dq, dk, 4, 31), score: info.name, seed: 2, temperature: 0.8 };
      checkBackward(o, `${info.name} plain`);
      checkBackward({ ...o, causal: true, causalAlignment: 'bottom_right', relativeBias: [0.2, -0.1, 0.3] }, `${info.name} causal + relative`);
      checkBackward({ ...o, bias: randomMatrix(6, 9, 8), keyLength: 7 }, `${info.name} dense + padding`);
      checkBackward({ ...o, alibiSlope: 0.25, t5: { numBuckets: 4, maxDistance: 8, bidirectional: false }, t5Table: [0.1, 0.2, -0.3, 0.4] },
        `${info.name} ALiBi + T5`);
      const [dq2, dk2] = dims(shapes[2]);
      checkBackward({ ...inputs(70, 300, dq2, dk2, 5, 41), score: info.name, seed: 2 }, `${info.name} 70x300`);
    });
  });
}

describe('where the tiled kernels defer to the core', () => {
  // The tiled module is built with SIMD, so its copy of the core rounds differently from
  // forward()'s: both are held to the reference, not to each other bit for bit.
  test('a normalizer other than softmax: the core computes it (tiled false), within the rule', () => {
    for (const normalizer of ['sparsemax', 'topk_softmax']) {
      const o = { ...inputs(5, 7, 4, 4, 3, 51), normalizer };
      const fast = checkForward(o, normalizer, { mustTile: false });
      assert.equal(fast.tiled, false);
      checkBackward(o, normalizer, { mustTile: false });
    }
  });
  test('logits that overflow float32 once divided by the temperature: the core answers or names the fault', () => {
    const big = [[3e4, 3e4], [-3e4, 1]];
    const o = { query: big, key: big, value: [[1, 2], [3, 4]], score: 'dot', temperature: 1e-30 };
    let coreErr = null, fastErr = null;
    try { qk.forward(o); } catch (e) { coreErr = e; }
    try { tiled.attention(o); } catch (e) { fastErr = e; }
    if (coreErr) {
      assert.ok(fastErr instanceof RangeError, `attention must throw as forward: ${coreErr.message}`);
      assert.equal(fastErr.message, coreErr.message);
    } else {
      assert.equal(fastErr, null, `attention threw where forward did not: ${fastErr?.message}`);
      // logsumexp (about 1.8e39) is past float32 for every path: compare it with forward's.
      const fast = tiled.attention(o), full = qk.forward(o), r = ref.reference(o);
      assert.equal(fast.tiled, false, 'fold-unsafe: the core computed it');
      assertMatchesReference(fast.output.data, r.naiveOutput, r.output, 'overflow: output');
      assert.deepEqual(Array.from(fast.logsumexp), Array.from(full.logsumexp));
    }
  });
});

describe('the promise API loads the tiled module once', () => {
  test('attention / attentionBackward resolve to what the synchronous calls return', async () => {
    const o = inputs(4, 6, 3, 3, 2, 61);
    assert.deepEqual(await qk.attention(o), tiled.attention(o));
    assert.equal(await qk.tiled(), tiled, 'one instance');
    const G = randomMatrix(4, 2, 5);
    assert.deepEqual(await qk.attentionBackward(o, G), tiled.attentionBackward(o, G));
  });
});
