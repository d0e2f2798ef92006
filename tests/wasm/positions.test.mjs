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
  bad({ queries: 2, numBuckets: 1 }, /^numBuckets must be an integer \[2, 2147483647\], got 1/);
  bad({ queries: 2, maxDistance: 0 }, /^maxDistance must be an integer \[1, 2147483647\], got 0/);
  bad({ queries: 2, numBuckets: 2.5 }, /numBuckets must be an integer/);
  bad({ queries: 2, causalAlignment: 'middle' }, /causalAlignment must be 'top_left' or 'bottom_right'/);
  bad({ queries: 2, bucket: 3 }, /unknown option 'bucket'/);
});

test('forward: relativeBias and t5 follow the alignment; backward returns dT5Table', () => {
  // KV-cache decoding: one query after 4 cached keys, zero scores so the logits are the bias.
  const query = [[0, 0]];
  const key = Array.from({ length: 5 }, () => [1, 1]);
  const value = key;
  const relativeBias = [0, 1, 2, 3, 4, 5, 6, 7, 8];
  const br = qk.forward({ query, key, value, relativeBias, causalAlignment: 'bottom_right' });
  const tl = qk.forward({ query, key, value, relativeBias });
  assert.deepEqual(Array.from(br.scores.data), [0, 1, 2, 3, 4], 'offsets -4 ... 0 -> r[0 ... 4]');
  assert.deepEqual(Array.from(tl.scores.data), [4, 5, 6, 7, 8], 'offsets 0 ... 4 -> r[4 ... 8]');
  const t5 = { numBuckets: 8, maxDistance: 4 };
  const t5Table = [0, 1, 2, 3, 4, 5, 6, 7];
  const b5 = qk.forward({ query, key, value, t5, t5Table, causalAlignment: 'bottom_right' });
  const buckets = qk.t5Buckets({ queries: 1, keys: 5, causalAlignment: 'bottom_right', ...t5 });
  assert.deepEqual(Array.from(b5.scores.data), Array.from(buckets.data));
  const g = qk.backward({ query, key, value, t5, t5Table, causalAlignment: 'bottom_right' }, [[1, 0]]);
  assert.equal(g.dT5Table.length, 8);
  // Sum of dL/dz over a row is 0 for softmax, so the table's gradient sums to 0.
  assert.ok(Math.abs(g.dT5Table.reduce((a, x) => a + x, 0)) < 1e-6);
});

test('forward: T5 option errors name the option', () => {
  const X = [[1, 0], [0, 1]];
  const bad = (opts, re) => assert.throws(() => qk.forward({ query: X, key: X, value: X, ...opts }), (e) => e instanceof RangeError && re.test(e.message), String(re));
  bad({ t5: { numBuckets: 1 }, t5Table: [0] }, /^t5\.numBuckets must be an integer \[2, 2147483647\], got 1/);
  bad({ t5: { numBuckets: 4, maxDistance: 0 }, t5Table: [0, 0, 0, 0] }, /^t5\.maxDistance must be an integer \[1, 2147483647\], got 0/);
  bad({ t5: { numBuckets: 4 }, t5Table: [0, 0, 0] }, /^t5Table must have t5\.numBuckets = 4 entries, got 3/);
  bad({ t5Table: [0, 0] }, /t5Table is set but t5 \(the bucketing\) is not/);
  bad({ t5: {} }, /^t5Table must have t5\.numBuckets = 32 entries, got 0/);
  bad({ t5: { buckets: 4 } }, /t5: unknown option 'buckets' \(known: numBuckets, maxDistance, bidirectional\)/);
  bad({ relativeBias: [0, 0] }, /relativeBias must have odd length 2R\+1 \(R >= 0\), got length 2/);
});
