// Reliability of the WebAssembly API (docs/RELIABILITY.md): the silent-NaN faults found by
// differential testing, each with its right value, and a seeded fuzz loop over the option
// parser (wasm/src/convert.hpp, api.hpp): hostile options, shapes and numbers either give
// finite results or a RangeError naming the argument, never NaN, never another error type,
// and the module keeps working. `QKSCOPE_JS_FUZZ=N` runs N cases (default 3000).
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { X, assertClose, assertThrowsWith, load, toRows } from './helpers.mjs';

let qk;
before(async () => {
  qk = await load();
});

const finite = (m) => Array.from(m.data ?? m).every(Number.isFinite);

describe('faults found by differential testing', () => {
  test('Gumbel: the seed whose first uniform draw rounded to 1.0 gives weight 1, not NaN', () => {
    const r = qk.forward({ query: [[0]], key: [[0]], value: [[1]], normalizer: 'gumbel_softmax', seed: 608688947055533 });
    assert.deepEqual(Array.from(r.weights.data), [1]);
    assert.deepEqual(Array.from(r.output.data), [1]);
  });

  test('a temperature above the float32 maximum is a RangeError (forward, backward, multiHeadForward)', () => {
    const o = { query: [[1]], key: [[1], [2]], value: [[1], [2]], temperature: 1e39, keyLength: 1 };
    assertThrowsWith(() => qk.forward(o), RangeError, /temperature 1e\+39 overflows to Infinity/);
    assertThrowsWith(() => qk.backward(o, [[1]]), RangeError, /temperature/);
    assertThrowsWith(() => qk.multiHeadForward({ query: X, heads: 2, dK: 2, dV: 2, temperature: 1e39 }), RangeError, /temperature/);
  });

  test('a multi-head projection past the float32 range is a RangeError naming it, not a head\'s error', () => {
    // X W_Q of a query of 3e38 is past FLT_MAX: the error names the projection (it blamed the
    // head's query before); the module keeps working.
    assertThrowsWith(() => qk.multiHeadForward({ query: [[3e38, -3e38, 3e38, 3e38]], heads: 2, dK: 2, dV: 2 }),
      RangeError, /the query projection Q = query W_Q overflowed at \(0, 0\)/);
    assert.ok(finite(qk.multiHeadForward({ query: X, heads: 2, dK: 2, dV: 2 }).output));
  });

  test('a scale above the float32 maximum is a RangeError naming the scale', () => {
    const o = { query: [[1]], key: [[1], [2]], value: [[1], [2]], scale: 1e39 };
    assertThrowsWith(() => qk.forward(o), RangeError, /scale 1e\+39 overflows/);
    assertThrowsWith(() => qk.backward(o, [[1]]), RangeError, /scale 1e\+39 overflows/);
    assert.equal(qk.forward({ ...o, scale: 1e38 }).weights.data[1], 1);  // representable: the larger score wins
  });

  test('precisionSoftmax: a NaN fill is a RangeError (no silent NaN weights)', () => {
    assertThrowsWith(() => qk.precisionSoftmax({ scores: [[1, 2]], mask: [[true, false]], fill: NaN, method: 'masked_fill' }),
      RangeError, /fill must be a number or -Infinity, got NaN/);
  });

  test('temperature 3.4e38 with bias [3e38, -3e38]: (z - max) / tau without overflow', () => {
    const r = qk.forward({ query: [[1]], key: [[1], [2]], value: [[1], [2]], temperature: 3.4e38, bias: [[3e38, -3e38]] });
    assertClose(Array.from(r.weights.data), [0.853798, 0.146202], 2e-6, 'weights');
    assert.ok(Number.isFinite(r.logsumexp[0]));
  });

  test('backward with dO V^T past float32: exact zeros, not NaN', () => {
    const g = qk.backward({ query: [[1, 0]], key: [[1, 0], [0, 1]], value: [[1e20], [1e20]] }, [[1e20]]);
    assert.deepEqual(Array.from(g.dQuery.data), [0, 0]);
    assert.deepEqual(Array.from(g.dKey.data), [0, 0, 0, 0]);
    assert.equal(g.dTemperature, 0);
    assertClose(Array.from(g.dValue.data).map((x) => x / 1e20), [0.669762, 0.330238], 1e-6, 'dValue / 1e20');
  });

  test('backward at temperature 1e-40: exact zeros for equal values, a RangeError when the gradient overflows', () => {
    const o = { query: [[1, 1]], key: [[1, 0], [0, 1]], temperature: 1e-40 };
    const g = qk.backward({ ...o, value: [[1], [1]] }, [[1]]);
    assert.deepEqual(Array.from(g.dQuery.data), [0, 0]);
    assert.equal(g.dTemperature, 0);
    assertThrowsWith(() => qk.backward({ ...o, value: [[1], [2]] }, [[1]]), RangeError, /gradient overflowed/);
  });

  test('q . k past -FLT_MAX / tau still attends: output 1 (tiled-path fault; same value here)', () => {
    const r = qk.forward({ query: [[-3e38]], key: [[1]], value: [[1]], score: 'dot', temperature: 1e-3 });
    assert.deepEqual(Array.from(r.output.data), [1]);
  });

  test('a raw score past float32 is a RangeError even under a softcap (forward and the fast attention())', async () => {
    // q . k = 3.7e68 is Infinity in float32; tanh(Infinity) = 1 used to give a finite logit.
    const o = { query: [[-1.8215112e30]], key: [[-2.01378021e38], [0]], value: [[0, 0], [0, -2.43654371e38]],
      score: 'dot', scale: 1e-40, temperature: 1e-4, softcap: 3.4e38 };
    assertThrowsWith(() => qk.forward(o), RangeError, /scores overflowed at \(0, 0\): raw score (inf|Infinity) before the scale and softcap/);
    const tiled = await qk.tiled();
    assertThrowsWith(() => tiled.attention(o), RangeError, /raw score (inf|Infinity)/);
    assert.ok(finite(qk.forward({ ...o, query: [[1]] }).output), 'the module keeps working');
  });

  test('relativeBias of even length, [] included, is a RangeError', () => {
    assertThrowsWith(() => qk.forward({ query: X, key: X, value: X, relativeBias: [] }), RangeError, /relativeBias must have odd length/, /got length 0/);
    assertThrowsWith(() => qk.forward({ query: X, key: X, value: X, relativeBias: [1, 2] }), RangeError, /odd length/);
  });

  test('BigInt64Array data is a RangeError naming the argument, not an anonymous TypeError', () => {
    const data = new BigInt64Array(12);
    assertThrowsWith(() => qk.forward({ query: { rows: 3, cols: 4, data }, key: X, value: X }), RangeError, /^query\.data\[0\]/, /BigInt/);
    assertThrowsWith(() => qk.forward({ query: X, key: X, value: X, relativeBias: new BigUint64Array(3) }), RangeError, /^relativeBias\[0\]/);
  });

  test('a hidden size that disagrees with params.v blames hidden and params.v, not params.W_q', () => {
    const err = assertThrowsWith(
      () => qk.forward({ query: X, key: X, value: X, score: 'additive', hidden: 4, params: { v: [1, 2, 3] } }),
      RangeError, /hidden = 4 disagrees with params\.v \(length\) = 3/);
    assert.doesNotMatch(err.message, /W_q/);
  });

  test('cosine: never above 1, exact ties go to index 0, a zero query has zero gradient', () => {
    const r = qk.forward({ query: [[1, 4]], key: [[1, 4]], value: [[1]], score: 'cosine' });
    assert.equal(r.rawScores.data[0], 1);
    const h = qk.forward({ query: [[1]], key: [[1.7], [0.1]], value: [[1], [2]], score: 'cosine', normalizer: 'hard' });
    assert.deepEqual(Array.from(h.weights.data), [1, 0]);
    const g = qk.backward({ query: [[0, 0]], key: [[1.7, 1.7], [1, 1]], value: [[1], [2]], score: 'cosine' }, [[1]]);
    assert.deepEqual(Array.from(g.dQuery.data), [0, 0]);
  });
});

// ---- seeded fuzz of the option parser ------------------------------------------------------

function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HOSTILE = [
  0, 1, -1, 0.5, 1e-45, 1e-40, 3.4e38, 3.5e38, 1e39, -3e38, 1e308, Number.MAX_SAFE_INTEGER, 2 ** 53, -0,
  NaN, Infinity, -Infinity, '1', '<img src=x onerror=alert(1)>', null, undefined, true, [], {}, [[]], 10n,
  Symbol('s'), () => 1, 'a'.repeat(1 << 20), new Float64Array([1, 2]), new Uint8Array(3),
];

function deep(depth) {
  let x = [1];
  for (let i = 0; i < depth; i++) x = [x];
  return x;
}

function pick(r, xs) { return xs[Math.floor(r() * xs.length)]; }

function number(r) {
  return r() < 0.7 ? Math.round((r() * 8 - 4) * 100) / 100 : pick(r, HOSTILE);
}

function matrix(r, rows, cols) {
  const m = [];
  for (let i = 0; i < rows; i++) {
    const row = [];
    for (let j = 0; j < cols; j++) row.push(r() < 0.97 ? Math.round((r() * 8 - 4) * 10) / 10 : number(r));
    m.push(row);
  }
  if (r() < 0.05) return { rows, cols, data: new Float32Array(m.flat().map((x) => (typeof x === 'number' ? x : NaN))) };
  if (r() < 0.03) return deep(Math.floor(r() * 2000));
  if (r() < 0.03) return pick(r, HOSTILE);
  return m;
}

function options(r) {
  const Lq = Math.floor(r() * 4) + (r() < 0.05 ? 0 : 1), Lk = Math.floor(r() * 5) + 1, d = Math.floor(r() * 3) + 1;
  const o = { query: matrix(r, Lq, d), key: matrix(r, Lk, d), value: matrix(r, r() < 0.05 ? Lk + 1 : Lk, 2) };
  const maybe = (p, k, v) => { if (r() < p) o[k] = v(); };
  maybe(0.4, 'score', () => pick(r, ['dot', 'scaled_dot', 'cosine', 'bilinear', 'additive', 'linear_concat', 'nope', 3]));
  maybe(0.4, 'normalizer', () => pick(r, ['softmax', 'hard', 'gumbel_softmax', 'sparsemax', 'topk_softmax', '<b>x</b>']));
  maybe(0.3, 'temperature', () => number(r));
  maybe(0.2, 'scale', () => number(r));
  maybe(0.2, 'seed', () => (r() < 0.8 ? Math.floor(r() * 2 ** 53) : number(r)));
  maybe(0.2, 'topK', () => number(r));
  maybe(0.2, 'hard', () => (r() < 0.8 ? r() < 0.5 : number(r)));
  maybe(0.2, 'keyLength', () => (r() < 0.7 ? Math.floor(r() * (Lk + 2)) : number(r)));
  maybe(0.2, 'causal', () => (r() < 0.8 ? r() < 0.5 : number(r)));
  maybe(0.1, 'causalAlignment', () => pick(r, ['top_left', 'bottom_right', 'x']));
  maybe(0.1, 'window', () => (r() < 0.7 ? { left: number(r), right: number(r) } : number(r)));
  maybe(0.15, 'mask', () => matrix(r, Lq, Lk)?.map?.((row) => row?.map?.((x) => (typeof x === 'number' ? x > 0 : x))) ?? number(r));
  maybe(0.15, 'bias', () => matrix(r, Lq, Lk));
  maybe(0.15, 'softcap', () => number(r));
  maybe(0.15, 'alibiSlope', () => number(r));
  maybe(0.15, 'relativeBias', () => (r() < 0.6 ? Array.from({ length: Math.floor(r() * 5) }, () => number(r)) : number(r)));
  maybe(0.1, 'hidden', () => number(r));
  maybe(0.1, 'params', () => (r() < 0.7 ? { v: [number(r), number(r)], W: matrix(r, d, d) } : number(r)));
  if (r() < 0.02) o.unknownOption = 1;
  return o;
}

describe('option parser fuzz (seeded)', () => {
  test('hostile options give finite results or a RangeError; the module keeps working', (t) => {
    const N = Number(process.env.QKSCOPE_JS_FUZZ ?? 3000);
    const r = rng(12);
    let ok = 0, refused = 0, oom = 0;
    for (let n = 0; n < N; n++) {
      const o = options(r);
      let res;
      try {
        res = r() < 0.3 ? qk.backward(o, o.query?.map?.(() => [1, 1]) ?? [[1, 1]]) : qk.forward(o);
      } catch (e) {
        if (e instanceof RangeError) { refused++; continue; }
        // A getter-free object can only fail with a RangeError, or an Error for out of memory.
        if (e instanceof Error && /out of memory/.test(e.message)) { oom++; continue; }
        assert.fail(`case ${n}: ${e?.name}: ${String(e?.message).slice(0, 200)} for ${JSON.stringify(o, (k, v) => (typeof v === 'bigint' ? `${v}n` : typeof v === 'string' && v.length > 40 ? `<${v.length} chars>` : v)).slice(0, 400)}`);
      }
      ok++;
      for (const [k, v] of Object.entries(res)) {
        if (k === 'logsumexp') assert.ok(Array.from(v).every((x) => !Number.isNaN(x)), `case ${n}: NaN logsumexp`);
        else if (k === 'dTemperature') assert.ok(Number.isFinite(v), `case ${n}: dTemperature ${v}`);
        else if (v && (v.data || ArrayBuffer.isView(v)) && !['maskedScores'].includes(k)) assert.ok(finite(v), `case ${n}: non-finite ${k}`);
      }
    }
    t.diagnostic(`${N} cases: ${ok} finite results, ${refused} RangeErrors`);
    assert.ok(ok > N / 10 && refused > N / 10, `a mix of accepted (${ok}) and refused (${refused}) cases`);
    assert.equal(oom, 0);
    assertClose(toRows(qk.forward({ query: X, key: X, value: X }).weights)[0], [0.5065, 0.1863, 0.3072], 5e-5, 'still works');
  });
});
