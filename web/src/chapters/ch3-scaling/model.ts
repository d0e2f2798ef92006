/**
 * Chapter 3's experiments (no DOM), run through the core's forward():
 * 1. Monte Carlo variance of raw scores q.k for q, k with i.i.d. N(0, 1) entries: Var = d_k
 *    (each product q_i k_i has variance 1 and the d_k products are independent), so
 *    Var(q.k / sqrt(d_k)) = 1 and Var(q.k / d_k) = 1 / d_k (docs/facts.md §3; Vaswani et al.
 *    2017, footnote 4).
 * 2. Softmax saturation against d_k: mean max weight per row, and the mean Frobenius norm of
 *    the softmax Jacobian J = diag(p) - p p^T, ||J||_F^2 = sum p^2 - 2 sum p^3 + (sum p^2)^2,
 *    which tends to 0 as p becomes one-hot (gradients vanish).
 * Everything is seeded: the same (seed, size) gives the same numbers.
 */
import type { Matrix, QkScope } from '@qkscope/wasm';
import { normalMatrix, normals, stream } from '../../model/random';
import { choice, int } from '../../model/url-state';

/** d_k of the Monte Carlo table. */
export const MC_DIMS = [16, 64, 256, 512] as const;
/** d_k of the saturation curves. */
export const SAT_DIMS = [4, 8, 16, 32, 64, 128, 256, 512] as const;
/** Queries and keys per forward call: BATCH^2 pairs scored at once. */
export const BATCH = 32;
/** Query rows per saturation batch, and batches per d. */
const SAT_ROWS = 16;
const SAT_BATCHES = 4;

export type Scaling = 'none' | 'sqrt' | 'd';
export const SCALINGS: readonly Scaling[] = ['none', 'sqrt', 'd'];
export function scaleOf(s: Scaling, d: number): number {
  return s === 'none' ? 1 : s === 'sqrt' ? 1 / Math.sqrt(d) : 1 / d;
}

/** What a Moments holds, as plain data (it crosses from the worker to the page). */
export interface MomentsState {
  n: number;
  sum: number;
  sumSq: number;
}

/** Running sums for a variance. */
export class Moments {
  n = 0;
  private sum = 0;
  private sumSq = 0;
  static from(s: MomentsState): Moments {
    const m = new Moments();
    m.n = s.n;
    m.sum = s.sum;
    m.sumSq = s.sumSq;
    return m;
  }
  state(): MomentsState {
    return { n: this.n, sum: this.sum, sumSq: this.sumSq };
  }
  add(data: ArrayLike<number>, factor = 1): void {
    for (let i = 0; i < data.length; i++) {
      const x = data[i]! * factor;
      this.sum += x;
      this.sumSq += x * x;
    }
    this.n += data.length;
  }
  /** Unbiased sample variance (NaN before two samples). */
  variance(): number {
    if (this.n < 2) return NaN;
    return Math.max(0, (this.sumSq - (this.sum * this.sum) / this.n) / (this.n - 1));
  }
}

export interface McRow {
  d: number;
  raw: Moments; // q.k
  scaled: Moments; // q.k / sqrt(d), as the core computes it (scores of scaled_dot)
  byD: Moments; // q.k / d
}

const zeros = (rows: number): Matrix => ({ rows, cols: 1, data: new Float32Array(rows) });

/**
 * The Monte Carlo run, one batch at a time (so the page can draw while it runs). Each d has
 * its own random stream; batches go round-robin over d so all rows fill up together.
 */
export class VarianceRun {
  readonly rows: McRow[];
  readonly batchesPerDim: number;
  private done = 0;
  private readonly rngs: (() => number)[];

  constructor(private readonly qk: QkScope, seed: number, pairs: number) {
    this.batchesPerDim = Math.max(1, Math.ceil(pairs / (BATCH * BATCH)));
    this.rows = MC_DIMS.map((d) => ({ d, raw: new Moments(), scaled: new Moments(), byD: new Moments() }));
    this.rngs = MC_DIMS.map((d) => normals(stream(seed, 1000 + d)));
  }

  get total(): number {
    return this.batchesPerDim * this.rows.length;
  }

  get finished(): boolean {
    return this.done >= this.total;
  }

  /** Pairs scored so far for each d. */
  get pairs(): number {
    return Math.floor(this.done / this.rows.length) * BATCH * BATCH;
  }

  /** Runs one batch; returns false when there was nothing left to do. */
  step(): boolean {
    if (this.finished) return false;
    const k = this.done % this.rows.length;
    const row = this.rows[k]!;
    const next = this.rngs[k]!;
    const query = normalMatrix(next, BATCH, row.d);
    const key = normalMatrix(next, BATCH, row.d);
    const r = this.qk.forward({ query, key, value: zeros(BATCH), score: 'scaled_dot' });
    row.raw.add(r.rawScores.data);
    row.scaled.add(r.scores.data);
    row.byD.add(r.rawScores.data, 1 / row.d);
    this.done++;
    return true;
  }

  /** Runs until done or until `budgetMs` has passed (at least one batch). */
  run(budgetMs = Infinity, now: () => number = () => performance.now()): void {
    const t0 = now();
    while (this.step() && now() - t0 < budgetMs);
  }
}

export interface SaturationPoint {
  d: number;
  maxWeight: number;
  jacobian: number;
}

/** ||diag(p) - p p^T||_F for one row of weights. */
export function jacobianNorm(p: ArrayLike<number>): number {
  let s2 = 0;
  let s3 = 0;
  for (let j = 0; j < p.length; j++) {
    const x = p[j]!;
    s2 += x * x;
    s3 += x * x * x;
  }
  return Math.sqrt(Math.max(0, s2 - 2 * s3 + s2 * s2));
}

/** Mean max weight and mean Jacobian norm per row against d, for each scaling. */
export function saturation(qk: QkScope, seed: number, lk: number): Record<Scaling, SaturationPoint[]> {
  const out: Record<Scaling, SaturationPoint[]> = { none: [], sqrt: [], d: [] };
  for (const d of SAT_DIMS) {
    const next = normals(stream(seed, 5000 + d));
    const acc: Record<Scaling, { m: number; j: number }> = { none: { m: 0, j: 0 }, sqrt: { m: 0, j: 0 }, d: { m: 0, j: 0 } };
    for (let b = 0; b < SAT_BATCHES; b++) {
      const query = normalMatrix(next, SAT_ROWS, d);
      const key = normalMatrix(next, lk, d);
      for (const s of SCALINGS) {
        const r = qk.forward({ query, key, value: zeros(lk), score: 'dot', scale: scaleOf(s, d) });
        for (let i = 0; i < SAT_ROWS; i++) {
          acc[s].m += r.maxWeight[i]!;
          acc[s].j += jacobianNorm(r.weights.data.subarray(i * lk, (i + 1) * lk));
        }
      }
    }
    const n = SAT_ROWS * SAT_BATCHES;
    for (const s of SCALINGS) out[s].push({ d, maxWeight: acc[s].m / n, jacobian: acc[s].j / n });
  }
  return out;
}

/** Max weight and Jacobian norm of uniform weights over lk keys (the flat limit). */
export function uniformLimit(lk: number): { maxWeight: number; jacobian: number } {
  return { maxWeight: 1 / lk, jacobian: Math.sqrt(1 / lk - 1 / (lk * lk)) };
}

/** The chapter's URL state: one field table (model/url-state.ts) shared by its figures. */
export function makeSpec() {
  return {
    seed: int(1, 0, 999_999),
    samples: choice(['1000', '10000', '100000'] as const, '10000'),
    lk: int(16, 2, 64),
  };
}
export type Ch3Spec = ReturnType<typeof makeSpec>;
