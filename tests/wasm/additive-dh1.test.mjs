// Additive attention with one tanh unit (d_h = 1), as chapter 2 describes it: every query
// ranks the keys by w_k . k when v > 0 and in reverse when v < 0, while the query's shift of
// the tanh argument changes the spacing of the scores (saturation), not only their scale.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { load, toRows } from './helpers.mjs';

let qk;
before(async () => {
  qk = await load();
});

const Q = [[0, 0], [1.5, -0.5], [-2, 1], [3, 3]];
const K = [[0.2, -0.4], [1, 0.5], [-0.7, 0.1], [0.4, 0.9], [-1.2, -1]];
const params = (v) => ({ W_q: [[0.8, 0.3]], W_k: [[0.6, -0.5]], v: [v], b: [0.1] });
const keyTerm = K.map(([a, b]) => 0.6 * a - 0.5 * b);
const order = (xs) => xs.map((x, j) => [x, j]).sort((p, q) => q[0] - p[0]).map(([, j]) => j);

function scores(v) {
  return toRows(qk.forward({ query: Q, key: K, value: K, score: 'additive', params: params(v) }).rawScores);
}

test('d_h = 1: every query ranks the keys by w_k . k when v > 0', () => {
  for (const row of scores(1.5)) assert.deepEqual(order(row), order(keyTerm));
});

test('d_h = 1: the ranking reverses when v < 0', () => {
  const reversed = order(keyTerm).reverse();
  for (const row of scores(-1.5)) assert.deepEqual(order(row), reversed);
});

test('d_h = 1: tanh saturation changes the spacing per query, not just the scale', () => {
  // Ratio of the gap between the two best keys to the full range: constant if only the
  // sharpness changed, different when queries land on different parts of tanh.
  const ratios = scores(1.5).map((row) => {
    const s = [...row].sort((a, b) => b - a);
    return (s[0] - s[1]) / (s[0] - s[s.length - 1]);
  });
  assert.ok(Math.max(...ratios) > 2 * Math.min(...ratios), `gap ratios ${ratios.map((r) => r.toFixed(3)).join(', ')}`);
});
