// t5Buckets(): T5's bucketed relative positions from the core, with the mask's diagonal
// alignment, and its errors.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';

import { load, toRows } from './helpers.mjs';

let qk;
before(async () => {
  qk = await load();
});

test('t5Buckets: T5 sizes give the released rule; alignment moves the diagonal', () => {
  // One query at the end of 201 keys (bottom-right): r = j - 200 = -200 ... 0.
  const row = qk.t5Buckets({ queries: 1, keys: 201, causalAlignment: 'bottom_right' }).data;
  const at = (r) => row[200 + r];
  assert.deepEqual([-200, -128, -127, -64, -20, -8, -7, -1, 0].map(at), [15, 15, 15, 14, 10, 8, 7, 1, 0]);
  const dec = qk.t5Buckets({ queries: 1, keys: 201, causalAlignment: 'bottom_right', bidirectional: false }).data;
  assert.deepEqual([-200, -127, -64, -20, -1, 0].map((r) => dec[200 + r]), [31, 31, 26, 17, 1, 0]);
  const tl = toRows(qk.t5Buckets({ queries: 2, keys: 5, numBuckets: 8, maxDistance: 16 }));
  const br = toRows(qk.t5Buckets({ queries: 2, keys: 5, numBuckets: 8, maxDistance: 16, causalAlignment: 'bottom_right' }));
  assert.equal(tl[1][1], 0, 'top-left: query 1 sits at key 1');
  assert.equal(br[1][4], 0, 'bottom-right: query 1 sits at key 4');
  assert.equal(br[0][3], 0);
  assert.equal(tl[0][1], 5, 'bidirectional: key after the query goes to the second half (4 + 1)');
});

test('t5Buckets errors are RangeErrors naming the option', () => {
  const bad = (opts, re) => assert.throws(() => qk.t5Buckets(opts), (e) => e instanceof RangeError && re.test(e.message), String(re));
  bad({ queries: 2, numBuckets: 1 }, /numBuckets must be >= 2, got 1/);
  bad({ queries: 2, maxDistance: 0 }, /maxDistance must be >= 1, got 0/);
  bad({ queries: 2, numBuckets: 2.5 }, /numBuckets must be an integer/);
  bad({ queries: 2, causalAlignment: 'middle' }, /causalAlignment must be 'top_left' or 'bottom_right'/);
  bad({ queries: 2, bucket: 3 }, /unknown option 'bucket'/);
});
