// Bad input to the fast calls: attention() / attentionBackward() (and their promise forms)
// throw the very RangeError forward() / backward() throw for the same options (one option
// reader, wasm/src/api.hpp), and both modules keep working afterwards.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { X, assertClose, assertThrowsWith, load, toRows } from './helpers.mjs';
import { base, rangeErrors } from './bad-inputs.mjs';

const qk = await load();
const tiled = await qk.tiled();

const EXPECTED_ROW0 = [0.8137, 0.4935, 0.5065, 0.1863];  // output row 0 of the worked example

function assertStillWorks() {
  assertClose(toRows(tiled.attention(base()).output)[0], EXPECTED_ROW0, 5e-5, 'attention row 0 after an error');
  assertClose(toRows(qk.forward(base()).output)[0], EXPECTED_ROW0, 5e-5, 'forward row 0 after an error');
}

/** The error fn throws (fails the test when it does not throw). */
function errorOf(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  assert.fail('nothing was thrown');
}

describe('attention: the same RangeError as forward', () => {
  for (const [what, options, ...patterns] of rangeErrors) {
    test(what, () => {
      const expected = errorOf(() => qk.forward(options));
      const err = assertThrowsWith(() => tiled.attention(options), RangeError, ...patterns);
      assert.equal(err.message, expected.message);
      const G = [[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]];
      const expectedB = errorOf(() => qk.backward(options, G));
      const errB = assertThrowsWith(() => tiled.attentionBackward(options, G), RangeError, ...patterns);
      assert.equal(errB.message, expectedB.message);
      assertStillWorks();
    });
  }

  test('options that are not an object', () => {
    for (const bad of [undefined, null, 5, 'query', [X, X, X]])
      assertThrowsWith(() => tiled.attention(bad), RangeError, /^options must be an object/);
    assertStillWorks();
  });

  test('attentionBackward: gradOutput of the wrong shape, missing or NaN', () => {
    for (const G of [[[1, 1, 1, 1]], undefined, [[1, 1, 1, NaN], [1, 1, 1, 1], [1, 1, 1, 1]]]) {
      const expected = errorOf(() => qk.backward(base(), G));
      const err = assertThrowsWith(() => tiled.attentionBackward(base(), G), RangeError, /^gradOutput/);
      assert.equal(err.message, expected.message);
    }
    assertStillWorks();
  });

  test('the promise forms reject with the same RangeError', async () => {
    for (const [, options] of rangeErrors.slice(0, 8)) {
      const expected = errorOf(() => qk.forward(options));
      await assert.rejects(qk.attention(options), (e) => e instanceof RangeError && e.message === expected.message);
      await assert.rejects(qk.attentionBackward(options, X), RangeError);
    }
    assertStillWorks();
  });

  test('the module survives many errors in a row', () => {
    for (let i = 0; i < 500; i++) {
      assert.throws(() => tiled.attention({ ...base(), temperature: 0 }), RangeError);
      assert.throws(() => tiled.attention({ ...base(), query: [[1, 2], [3]] }), RangeError);
    }
    assertStillWorks();
  });

  test('a JS exception raised while reading the input passes through unchanged', () => {
    const evil = { key: X, value: X };
    Object.defineProperty(evil, 'query', { enumerable: true, get() { throw new TypeError('getter says no'); } });
    assert.throws(() => tiled.attention(evil), { name: 'TypeError', message: 'getter says no' });
    assertStillWorks();
  });
});
