/**
 * Chapter 5's model code (no DOM): example tokens, the ALiBi slope construction, graph
 * edges as a bit mask, and the fill values of the precision demo.
 * ALiBi (Press, Smith & Lewis 2022, §3 and the authors' get_slopes): for H a power of two,
 * head h (1-based) has slope 2^(-8h/H); otherwise take the 2^floor(log2 H) slopes and add
 * every other slope of the 2 * 2^floor(log2 H) construction, interleaving the missing heads.
 */
import type { CausalAlignment, PrecisionResult, QkScope } from '@qkscope/wasm';
import { bool, choice, int, num } from '../../model/url-state';

/** L deterministic 2-d tokens (no RNG: shareable and stable). */
export function tokens(L: number, phase = 0): number[][] {
  return Array.from({ length: L }, (_, i) => [Math.round(100 * Math.cos(1.1 * i + phase)) / 100, Math.round(100 * Math.sin(0.7 * i + 0.4 + phase)) / 100]);
}

export function zeros(rows: number, cols: number): number[][] {
  return Array.from({ length: rows }, () => new Array<number>(cols).fill(0));
}

function powerOfTwoSlopes(n: number): number[] {
  return Array.from({ length: n }, (_, h) => 2 ** ((-8 * (h + 1)) / n));
}

/** ALiBi slopes for H heads, in head order. */
export function alibiSlopes(H: number): number[] {
  if (Number.isInteger(Math.log2(H))) return powerOfTwoSlopes(H);
  const p = 2 ** Math.floor(Math.log2(H));
  return [...powerOfTwoSlopes(p), ...alibiSlopes(2 * p).filter((_, k) => k % 2 === 0).slice(0, H - p)];
}

/** The 10 undirected edges of a 5-node graph, as node pairs (0-based), in bit order. */
export const NODES = 5;
export const PAIRS: [number, number][] = [];
for (let a = 0; a < NODES; a++) for (let b = a + 1; b < NODES; b++) PAIRS.push([a, b]);

/** Default edges: the path 1-2-3-4 plus 1-3; node 5 is isolated. */
export const DEFAULT_EDGES = [[0, 1], [1, 2], [2, 3], [0, 2]].reduce((m, [a, b]) => m | (1 << PAIRS.findIndex(([x, y]) => x === a && y === b)), 0);

/** Keep mask (NODES x NODES) of a graph: edge (both directions), plus the diagonal if `self`. */
export function adjacency(edges: number, self: boolean): boolean[][] {
  const m = Array.from({ length: NODES }, (_, i) => Array.from({ length: NODES }, (_, j) => self && i === j));
  PAIRS.forEach(([a, b], k) => {
    if (edges & (1 << k)) m[a]![b] = m[b]![a] = true;
  });
  return m;
}

/** Fill values of the precision demo, by URL key. finfo.min depends on the dtype. */
export const FILLS = ['1e4', '1e9', 'inf', 'min'] as const;
export type FillKey = (typeof FILLS)[number];
export const DTYPES = ['float16', 'bfloat16', 'float32'] as const;
export type DType = (typeof DTYPES)[number];
const FINFO_MIN: Record<DType, number> = { float16: -65504, bfloat16: -3.3895313892515355e38, float32: -3.4028234663852886e38 };

export function fillValue(key: FillKey, dtype: DType): number {
  return key === '1e4' ? -1e4 : key === '1e9' ? -1e9 : key === 'inf' ? -Infinity : FINFO_MIN[dtype];
}

/** Scores and keep mask of the precision demo: row 2 is fully masked. */
export const PREC_SCORES = [
  [2.0, 1.0, 0.5, 3.0],
  [0.5, 1.5, -0.5, 1.0],
  [4.0, 2.0, 1.0, 0.0],
];
export const PREC_MASK = [
  [1, 1, 1, 0],
  [0, 0, 0, 0],
  [1, 0, 1, 1],
];

/** Shapes of the empty-row demo: more queries than keys, no padding. */
export const EMPTY_DEMO = { lq: 5, lk: 3 } as const;

/** 1-based queries whose row has no visible key under a causal mask (core forward(), zero inputs). */
export function emptyCausalRows(qk: QkScope, lq: number, lk: number, causalAlignment: CausalAlignment): number[] {
  const r = qk.forward({ query: zeros(lq, 1), key: zeros(lk, 1), value: zeros(lk, 1), causal: true, causalAlignment });
  const out: number[] = [];
  for (let i = 0; i < lq; i++) if (r.logsumexp[i] === -Infinity) out.push(i + 1);
  return out;
}

/**
 * A fully masked row under an additive mask in float16: scores + finfo(float16).min.
 * Two float16 numbers add exactly in double, so handing the core their exact sum lets it do
 * what float16 addition does: round once to float16 (to -inf past -65520) and then the
 * softmax in float16 (max subtracted, no empty-row policy: the 'masked_fill' path with
 * every key kept). Scores below -16 overflow; milder ones round back to -65504.
 */
export const ADDITIVE_DEMO = { severe: [-20, -18, -25, -17], mild: [0.5, 1.5, -0.5, 1] } as const;

export function additiveMaskRow(qk: QkScope, scores: readonly number[]): PrecisionResult {
  return qk.precisionSoftmax({ scores: [scores.map((s) => s + FINFO_MIN.float16)], mask: [scores.map(() => true)], dtype: 'float16', method: 'masked_fill', fill: 0 });
}

/** A number as short display text: -1e9 -> "−1e+9", -Infinity -> "−∞". */
export function shortText(x: number | undefined): string {
  if (x === undefined || Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x < 0 ? '\u2212\u221e' : '\u221e';
  const s = Math.abs(x) >= 1e5 ? x.toExponential(Math.abs(x) % 1e5 === 0 && String(Math.abs(x)).replace(/0+$/, '').length <= 2 ? 0 : 6).replace(/\.?0+e/, 'e') : String(x);
  return s.replace('-', '\u2212');
}

/** The chapter's URL state: one field table (model/url-state.ts) shared by its figures. */
export function makeSpec() {
  return {
    lq: int(3, 1, 8),
    lk: int(5, 1, 8),
    pad: int(0, 0, 7),
    causal: bool(true),
    win: bool(false),
    left: int(2, 0, 7),
    right: int(0, 0, 7),
    heads: int(8, 1, 16),
    head: int(1, 1, 16),
    edges: int(DEFAULT_EDGES, 0, 1023),
    self: bool(true),
    cap: num(20, 1, 100, { digits: 3 }),
    dtype: choice(DTYPES, 'float32'),
    fill: choice(FILLS, 'inf'),
    t5n: int(8, 2, 32),
    t5d: int(10, 1, 64),
    t5dir: choice(['bi', 'causal'] as const, 'bi'),
    t5align: choice(['top_left', 'bottom_right'] as const, 'top_left'),
  };
}
export type Ch5Spec = ReturnType<typeof makeSpec>;
