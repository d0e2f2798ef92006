/**
 * Chapter 4's shared example and temperature sweep (no DOM). The example is a score matrix
 * Z (3 queries x 6 keys) fed to the core's forward() so that its logits are exactly Z:
 * Q = I_3, K = Z^T, score 'dot' (scale 1), V = I_6 (so the output equals the weights).
 * Weights p = softmax(z / tau); entropy H = -sum p log p (docs/facts.md §4).
 */
import type { ForwardOptions, ForwardResult, QkScope } from '@qkscope/wasm';
import { choice, num } from '../../model/url-state';

/** The shared example: row 1 well separated, row 2 close scores, row 3 two strong keys. */
export const C4_SCORES: number[][] = [
  [2.0, 1.0, 0.5, 0.0, -0.5, -1.0],
  [1.0, 0.9, 0.8, 0.2, 0.0, -0.3],
  [0.5, 2.5, 2.2, -1.0, 1.5, 0.0],
];

const identity = (n: number) => Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
const transpose = (m: number[][]) => m[0]!.map((_, j) => m.map((r) => r[j]!));

/** forward() options whose logits equal `scores` row for row. */
export function logitsOptions(scores: number[][]): ForwardOptions {
  return { query: identity(scores.length), key: transpose(scores), value: identity(scores[0]!.length), score: 'dot' };
}

/** Softmax of the example at temperature tau (plus any other options, e.g. normalizer). */
export function run(qk: QkScope, tau: number, extra: Partial<ForwardOptions> = {}, scores = C4_SCORES): ForwardResult {
  return qk.forward({ ...logitsOptions(scores), temperature: tau, ...extra });
}

/** n + 1 temperatures spaced evenly in log from lo to hi. */
export function logGrid(lo: number, hi: number, n: number): number[] {
  const a = Math.log10(lo);
  const b = Math.log10(hi);
  return Array.from({ length: n + 1 }, (_, k) => Number((10 ** (a + ((b - a) * k) / n)).toPrecision(4)));
}

/** Entropy of every row at each temperature of `taus`, computed by the core: [row][k]. */
export function entropySweep(qk: QkScope, taus: number[]): number[][] {
  const out: number[][] = C4_SCORES.map(() => []);
  for (const tau of taus) {
    const r = run(qk, tau);
    r.entropy.forEach((h, i) => out[i]!.push(h));
  }
  return out;
}

/** Largest |p_j - hard_j| over a row: how far softmax at tau is from the one-hot argmax. */
export function distanceToHard(soft: ArrayLike<number>, hard: ArrayLike<number>): number {
  let m = 0;
  for (let j = 0; j < soft.length; j++) m = Math.max(m, Math.abs(soft[j]! - hard[j]!));
  return m;
}

/** The chapter's URL state: one field table (model/url-state.ts) shared by its figures. */
export function makeSpec() {
  return {
    tau: num(1, 0.01, 100, { digits: 3 }),
    row: choice(['1', '2', '3'] as const, '1'),
  };
}
export type Ch4Spec = ReturnType<typeof makeSpec>;
