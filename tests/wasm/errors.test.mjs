// Bad input: each case throws a RangeError naming the argument, and the module keeps
// working afterwards (the C++ exception is caught in the bindings, not left to abort).
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { X, assertClose, assertThrowsWith, load, toRows } from './helpers.mjs';
import { base, rangeErrors } from './bad-inputs.mjs';

let qk;
before(async () => {
  qk = await load();
});

const EXPECTED_ROW0 = [0.5065, 0.1863, 0.3072];

/** The worked example still comes out right. */
function assertStillWorks() {
  assertClose(toRows(qk.forward(base()).weights)[0], EXPECTED_ROW0, 5e-5, 'weights row 0 after an error');
}

describe('forward: bad input throws RangeError naming the argument', () => {
  for (const [what, options, ...patterns] of rangeErrors) {
    test(what, () => {
      assertThrowsWith(() => qk.forward(options), RangeError, ...patterns);
      assertStillWorks();
    });
  }

  test('options that are not an object', () => {
    for (const bad of [undefined, null, 5, 'query', [X, X, X]]) {
      assertThrowsWith(() => qk.forward(bad), RangeError, /^options must be an object/);
    }
    assertStillWorks();
  });

  test('bilinear accepts d_q != d_k where dot throws', () => {
    const Q = [[1, 2], [3, 4]];
    assertThrowsWith(() => qk.forward({ query: Q, key: X, value: X, score: 'dot' }), RangeError, /d_q/);
    const r = qk.forward({ query: Q, key: X, value: X, score: 'bilinear' });
    assert.deepEqual([r.weights.rows, r.weights.cols], [2, 3]);
    assert.deepEqual([r.params.W.rows, r.params.W.cols], [2, 4]);
  });

  test('the module survives many errors in a row', () => {
    for (let i = 0; i < 500; i++) {
      assert.throws(() => qk.forward({ ...base(), temperature: 0 }), RangeError);
      assert.throws(() => qk.forward({ ...base(), query: [[1, 2], [3]] }), RangeError);
    }
    assertStillWorks();
  });

  test('out of memory throws a plain Error (not RangeError) and the module survives', () => {
    // 20000 x 20000 floats = 1.6 GB for the first score matrix: past the 1 GB heap cap.
    const L = 20000, M = { rows: L, cols: 1, data: new Float32Array(L).fill(1) };
    const err = assertThrowsWith(() => qk.forward({ query: M, key: M, value: M }), Error, /out of memory/);
    assert.ok(!(err instanceof RangeError), 'bad_alloc is not an input error');
    assertStillWorks();
  });

  test('a JS exception raised while reading the input passes through unchanged', () => {
    const evil = { key: X, value: X };
    Object.defineProperty(evil, 'query', { enumerable: true, get() { throw new TypeError('getter says no'); } });
    assert.throws(() => qk.forward(evil), { name: 'TypeError', message: 'getter says no' });
    assertStillWorks();
  });
});

describe('backward and initParams: bad input', () => {
  test('backward: gradOutput of the wrong shape names gradOutput', () => {
    assertThrowsWith(() => qk.backward(base(), [[1, 1, 1, 1]]), RangeError, /^gradOutput must have the shape of output/, /\(3, 4\)/);
    assertThrowsWith(() => qk.backward(base(), undefined), RangeError, /^gradOutput is required/);
    assertThrowsWith(() => qk.backward(base(), [[1, 1, 1, NaN], [1, 1, 1, 1], [1, 1, 1, 1]]), RangeError, /^gradOutput\[0\]\[3\] is NaN/);
    assertThrowsWith(() => qk.backward({ ...base(), temperature: 0 }, X), RangeError, /temperature/);
    assertStillWorks();
  });

  test('initParams: unknown score, bad sizes, bad seed', () => {
    assertThrowsWith(() => qk.initParams('nope', 2, 2, 2, 0), RangeError, /unknown scoring function 'nope'/, /additive/);
    assertThrowsWith(() => qk.initParams('bilinear', 0, 2, 2, 0), RangeError, /^dQ must be an integer/);
    assertThrowsWith(() => qk.initParams('bilinear', 2, 2.5, 2, 0), RangeError, /^dK must be an integer/);
    assertThrowsWith(() => qk.initParams('additive', 2, 2, 0, 0), RangeError, /d_h/);
    assertThrowsWith(() => qk.initParams('additive', 2, 2, 2, -3), RangeError, /^seed must be an integer/);
    assertThrowsWith(() => qk.initParams(undefined, 2, 2, 2, 0), RangeError, /^score must be a string/);
    assertStillWorks();
  });
});
