/**
 * Chapter 1's model (no DOM): the worked example and Figure 1.1's URL state.
 * The worked example: X with W_Q = W_K = W_V = I, so Q = K = V = X and S = X X^T / sqrt(4).
 * Figure 1.1 keeps its plain URL keys (?score=additive&tau=2&q=...), so links made before
 * the chapters were namespaced still open the same figure. Pipeline of the core:
 * f(q,k) -> x scale -> mask -> normalize(z / tau) -> weights x V.
 */
import type { ForwardOptions } from '@qkscope/wasm';
import { type Mat, resize } from '../../model/matrix';
import { MATRIX_LIMITS as LIM, type ValuesOf, bool, choice, clamp, int, matrix, num } from '../../model/url-state';

/** The worked example X (3 tokens, d = 4). */
export const WORKED_X: Mat = [
  [1, 0, 1, 0],
  [0, 1, 0, 1],
  [1, 1, 0, 0],
];

export const TAU = { min: 0.05, max: 20 } as const;
export const SEED = { min: 0, max: 999_999 } as const;
export const SIZE_KEYS = ['lq', 'lk', 'dq', 'dk', 'dv'] as const;
export type SizeKey = (typeof SIZE_KEYS)[number];

/** Figure 1.1's fields; `scores` are the core registry's names (the select lists them). */
export function makeSpec(scores: readonly string[]) {
  const [n, d] = [WORKED_X.length, WORKED_X[0]!.length];
  return {
    score: choice(scores, scores.includes('scaled_dot') ? 'scaled_dot' : scores[0]!),
    tau: num(1, TAU.min, TAU.max),
    causal: bool(false),
    seed: int(0, SEED.min, SEED.max),
    lq: int(n, LIM.len.min, LIM.len.max),
    lk: int(n, LIM.len.min, LIM.len.max),
    dq: int(d, LIM.dim.min, LIM.dim.max),
    dk: int(d, LIM.dim.min, LIM.dim.max),
    dv: int(d, LIM.dim.min, LIM.dim.max),
    /** Valid keys (key padding); the default, L_max, means "all keys", whatever L_k is. */
    klen: int(LIM.len.max, 1, LIM.len.max),
    q: matrix(WORKED_X),
    k: matrix(WORKED_X),
    v: matrix(WORKED_X),
  };
}
export type Ch1Spec = ReturnType<typeof makeSpec>;
export type Ch1Values = ValuesOf<Ch1Spec>;

/** The sizes decide the matrices (cut or zero-padded, entries keep their place) and the key length. */
export function normalize(s: Ch1Values): Ch1Values {
  return {
    ...s,
    q: resize(s.q, s.lq, s.dq),
    k: resize(s.k, s.lk, s.dk),
    v: resize(s.v, s.lk, s.dv),
    klen: clamp(s.klen, 1, s.lk),
  };
}

/** A change of sizes: "all keys valid" stays "all keys valid" when L_k changes. */
export function withSizes(s: Ch1Values, sizes: Partial<Pick<Ch1Values, SizeKey>>): Partial<Ch1Values> {
  return { ...sizes, klen: s.klen >= s.lk ? LIM.len.max : s.klen };
}

/** Options for the figure: softmax, top-left causal alignment, key padding by length. */
export function figureOptions(s: Ch1Values): ForwardOptions {
  return {
    query: s.q,
    key: s.k,
    value: s.v,
    score: s.score as ForwardOptions['score'],
    seed: s.seed,
    temperature: s.tau,
    causal: s.causal,
    causalAlignment: 'top_left',
    keyLength: s.klen,
  };
}
