/**
 * Chapter 6's example and helpers (no DOM). Three rows of logits over six keys, fed to the
 * core's forward() so that the logits are exactly these rows (Q = I_3, K = Z^T, 'dot',
 * V = I_6). Row 3 has a tie for the maximum (keys 1 and 2) to show the tie rule.
 * Gumbel-max (Gumbel 1954; Jang et al. 2017, eq. 1): argmax_j (z_j + g_j) ~ softmax(z).
 */
import type { ForwardOptions, ForwardResult, NormalizerName, QkScope } from '@qkscope/wasm';
import { bool, choice, int, num } from '../../model/url-state';

export const C6_SCORES: number[][] = [
  [2.0, 1.0, 0.5, 0.0, -0.5, -1.0],
  [1.2, 1.0, 0.9, 0.3, -0.2, -1.5],
  [2.0, 2.0, 0.5, 0.0, 1.0, -1.0],
];

const identity = (n: number) => Array.from({ length: n }, (_, i) => Array.from({ length: n }, (_, j) => (i === j ? 1 : 0)));
const transpose = (m: number[][]) => m[0]!.map((_, j) => m.map((r) => r[j]!));

export interface NormSettings {
  tau: number;
  k: number;
  seed: number;
  hard: boolean;
}

/** forward() options for one normalizer on the example. */
export function optionsFor(name: NormalizerName, s: NormSettings): ForwardOptions {
  const o: ForwardOptions = { query: identity(C6_SCORES.length), key: transpose(C6_SCORES), value: identity(C6_SCORES[0]!.length), score: 'dot', normalizer: name, temperature: s.tau, seed: s.seed };
  if (name === 'topk_softmax') o.topK = s.k;
  if (name === 'gumbel_softmax') o.hard = s.hard;
  return o;
}

export function runNorm(qk: QkScope, name: NormalizerName, s: NormSettings): ForwardResult {
  return qk.forward(optionsFor(name, s));
}

/** Number of exactly non-zero entries. */
export function support(xs: ArrayLike<number>): number {
  let n = 0;
  for (let j = 0; j < xs.length; j++) if (xs[j] !== 0) n++;
  return n;
}

/**
 * How often each key wins a hard Gumbel-softmax sample of row `i`, over seeds 1..n:
 * frequencies (sum 1). By the Gumbel-max trick they approach softmax(z) at tau = 1.
 */
export function gumbelFrequencies(qk: QkScope, i: number, n: number, tau: number): number[] {
  const L = C6_SCORES[0]!.length;
  const counts = new Array<number>(L).fill(0);
  for (let seed = 1; seed <= n; seed++) {
    const w = qk.forward(optionsFor('gumbel_softmax', { tau, k: 1, seed, hard: true })).weights;
    for (let j = 0; j < L; j++) if (w.data[i * L + j] === 1) counts[j]++;
  }
  return counts.map((c) => c / n);
}

/** softmax(z) of row `i` at tau = 1, from the core (the reference bars of the Gumbel figure). */
export function softmaxRow(qk: QkScope, i: number): number[] {
  const w = runNorm(qk, 'softmax', { tau: 1, k: 1, seed: 0, hard: false }).weights;
  return Array.from(w.data.subarray(i * w.cols, (i + 1) * w.cols));
}

/** The chapter's URL state: one field table (model/url-state.ts) shared by its figures. */
export function makeSpec() {
  return {
    tau: num(1, 0.05, 20, { digits: 3 }),
    k: int(2, 1, 6),
    seed: int(1, 0, 999_999),
    hard: bool(false),
    row: choice(['1', '2', '3'] as const, '1'),
    samples: choice(['100', '1000', '5000'] as const, '1000'),
  };
}
export type Ch6Spec = ReturnType<typeof makeSpec>;
