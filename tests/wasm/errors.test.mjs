// Bad input: each case throws a RangeError naming the argument, and the module keeps
// working afterwards (the C++ exception is caught in the bindings, not left to abort).
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { X, assertClose, assertThrowsWith, load, toRows } from './helpers.mjs';

let qk;
before(async () => {
  qk = await load();
});

const base = () => ({ query: X, key: X, value: X });
const EXPECTED_ROW0 = [0.5065, 0.1863, 0.3072];

/** The worked example still comes out right. */
function assertStillWorks() {
  assertClose(toRows(qk.forward(base()).weights)[0], EXPECTED_ROW0, 5e-5, 'weights row 0 after an error');
}

/** [description, options, ...message patterns]: each must throw a RangeError. */
const rangeErrors = [
  ['temperature 0 with softmax', { ...base(), temperature: 0 }, /temperature/, /softmax/],
  ['negative temperature', { ...base(), temperature: -1 }, /temperature/],
  ['NaN temperature', { ...base(), temperature: NaN }, /temperature/],
  ['value rows != key rows', { ...base(), value: X.slice(0, 2) }, /value/, /3/],
  ['unknown score', { ...base(), score: 'dotty' }, /dotty/, /dot, scaled_dot, cosine, bilinear, additive, linear_concat/],
  ['score not a string', { ...base(), score: 3 }, /score must be a string/],
  ['d_q != d_k with dot', { query: [[1, 2]], key: X, value: X, score: 'dot' }, /d_q = 2, d_k = 4/],
  ['d_q != d_k with scaled_dot', { query: [[1, 2]], key: X, value: X }, /same width/],
  ['ragged query rows', { ...base(), query: [[1, 0, 1, 0], [0, 1, 0], [1, 1, 0, 0]] }, /^query: row 1 has 3 entries, expected 4/],
  ['ragged key rows', { ...base(), key: [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1]] }, /^key: row 2 has 2 entries, expected 4/],
  ['NaN in query', { ...base(), query: [[1, 0, NaN, 0], [0, 1, 0, 1], [1, 1, 0, 0]] }, /^query\[0\]\[2\] is NaN/],
  ['Infinity in key', { ...base(), key: [[1, 0, 1, 0], [0, 1, 0, Infinity], [1, 1, 0, 0]] }, /^key\[1\]\[3\] must be finite/],
  ['string in value', { ...base(), value: [[1, 0, 1, 0], [0, '1', 0, 1], [1, 1, 0, 0]] }, /^value\[1\]\[1\] must be a number, got a string/],
  ['null in query', { ...base(), query: [[1, 0, 1, 0], [0, 1, null, 1], [1, 1, 0, 0]] }, /^query\[1\]\[2\] must be a number, got null/],
  ['hole in query', { ...base(), query: [[1, 0, 1, 0], [0, 1, , 1], [1, 1, 0, 0]] }, /^query\[1\]\[2\] must be a number, got undefined/], // eslint-disable-line no-sparse-arrays
  ['row not an array', { ...base(), query: [[1, 0, 1, 0], 5, [1, 1, 0, 0]] }, /^query: row 1 must be an array/],
  ['flat Float32Array', { ...base(), query: new Float32Array(12) }, /^query is a flat typed array/],
  ['data length != rows*cols', { ...base(), query: { rows: 2, cols: 3, data: [1, 2, 3, 4, 5] } }, /^query\.data has length 5, expected rows\*cols = 6/],
  ['NaN in Matrix data', { ...base(), key: { rows: 3, cols: 4, data: new Float32Array(12).fill(NaN) } }, /^key\.data\[0\]/, /NaN/],
  ['non-integer rows', { ...base(), query: { rows: 1.5, cols: 4, data: [1, 2, 3, 4] } }, /^query\.rows must be an integer/],
  ['object without data', { ...base(), query: { rows: 1, cols: 1 } }, /^query must be a matrix/],
  ['missing query', { key: X, value: X }, /^query is required/],
  ['empty key', { ...base(), key: [] }, /key must be non-empty/],
  ['unknown option', { ...base(), temprature: 2 }, /unknown option 'temprature'/, /temperature/],
  ['unknown normalizer', { ...base(), normalizer: 'softermax' }, /softermax/, /softmax, hard, gumbel_softmax, sparsemax, topk_softmax/],
  ['topK 0', { ...base(), normalizer: 'topk_softmax', topK: 0 }, /^topK must be an integer/],
  ['keyLength > L_k', { ...base(), keyLength: 4 }, /^keyLength/, /L_k = 3/],
  ['negative keyLength', { ...base(), keyLength: -1 }, /^keyLength must be an integer/],
  ['fractional keyLength', { ...base(), keyLength: 1.5 }, /^keyLength must be an integer/],
  ['causal not a boolean', { ...base(), causal: 'yes' }, /^causal must be a boolean, got a string/],
  ['bad causalAlignment', { ...base(), causalAlignment: 'diagonal' }, /causalAlignment must be 'top_left' or 'bottom_right'/],
  ['negative window', { ...base(), window: { left: -1, right: 0 } }, /^window\.left must be an integer/],
  ['empty window', { ...base(), window: {} }, /window must set left and\/or right/],
  ['mask of the wrong shape', { ...base(), mask: [[true, true], [true, true], [true, true]] }, /mask/, /\(3, 3\)/],
  ['string in mask', { ...base(), mask: [[true, true, true], [true, 'no', true], [true, true, true]] }, /^mask\[1\]\[1\] must be a boolean or a number/],
  ['numeric string in a boolean mask', { ...base(), mask: [[true, true, true], [true, '1', false], [true, true, true]] }, /^mask\[1\]\[1\] must be a boolean or a number.*got a string/],
  ['null in a boolean mask', { ...base(), mask: [[true, true, true], [true, true, false], [null, true, true]] }, /^mask\[2\]\[0\] must be a boolean or a number.*got null/],
  ['null in a -Infinity bias', { ...base(), bias: [[0, -Infinity, 0], [0, 0, null], [0, 0, 0]] }, /^bias\[1\]\[2\] must be a number, got null/],
  ['numeric string in a -Infinity bias', { ...base(), bias: [[0, -Infinity, '-2'], [0, 0, 0], [0, 0, 0]] }, /^bias\[0\]\[2\] must be a number, got a string/],
  ['bias of the wrong shape', { ...base(), bias: [[0, 0], [0, 0], [0, 0]] }, /bias/, /\(3, 3\)/],
  ['NaN in bias', { ...base(), bias: [[0, 0, 0], [0, NaN, 0], [0, 0, 0]] }, /^bias\[1\]\[1\] is NaN/],
  ['+Infinity in bias', { ...base(), bias: [[0, 0, Infinity], [0, 0, 0], [0, 0, 0]] }, /^bias\[0\]\[2\] is \+Infinity/],
  ['0/1 bias used as a mask', { ...base(), bias: [[1, 0, 1], [0, 1, 0], [1, 1, 1]] }, /^bias holds only 0 and 1/, /pass it as `mask`/],
  ['bilinear W of the wrong shape', { ...base(), score: 'bilinear', params: { W: [[1, 0], [0, 1]] } }, /params\.W/, /\(4, 4\)/],
  ['linear_concat w of the wrong length', { ...base(), score: 'linear_concat', params: { w: [1, 2, 3] } }, /params\.w/, /d_q \+ d_k = 8/],
  ['additive params of mismatched hidden size', { ...base(), score: 'additive', params: { v: [1, 2], W_q: [[1, 0, 0, 0]] } }, /params\.W_q/],
  ['unknown param', { ...base(), score: 'bilinear', params: { Wq: [[1]] } }, /params: unknown option 'Wq'/],
  ['param entry not a number', { ...base(), score: 'linear_concat', params: { w: [1, 2, 3, 4, 5, 6, 7, 'x'] } }, /^params\.w\[7\] must be a number/],
  ['negative seed', { ...base(), seed: -1 }, /^seed must be an integer/],
  ['hidden 0', { ...base(), score: 'additive', hidden: 0 }, /^hidden must be an integer/],
  ['scale not finite', { ...base(), scale: Infinity }, /scale must be finite/],
  ['scale not a number', { ...base(), scale: '2' }, /^scale must be a number, got a string/],
];

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
