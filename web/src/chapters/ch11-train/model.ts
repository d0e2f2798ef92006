/**
 * Chapter 11's model (no DOM): the URL field table of the ablation, the trainer options it
 * stands for (wasm/types/train.d.ts), and the figures drawn from the runs (steps to 95 %
 * held-out token accuracy, ms per step). Every list of names comes from a registry the
 * caller passes in (the core's scoring functions and normalizers, the training module's
 * tasks); the defaults are chosen to show the chapter's claims (docs/facts.md §11b).
 */
import { type FieldSpec, bool, choice, int, num } from '../../model/url-state';
import type { TrainEval } from '../../worker/protocol';

/** A non-empty set of names from `values`, written "a,b,c" in registry order. */
export function nameSet(values: readonly string[], def: readonly string[]): FieldSpec<string[]> {
  const clean = (xs: readonly string[]) => values.filter((v) => xs.includes(v));
  const fallback = clean(def).length ? clean(def) : values.slice(0, 1);
  return {
    default: fallback,
    parse: (raw) => {
      if (raw.length > 400) return null;
      const xs = clean(raw.split(','));
      return xs.length ? xs : null;
    },
    sanitize: (xs) => (clean(xs).length ? clean(xs) : fallback),
    format: (xs) => xs.join(','),
    equals: (a, b) => a.length === b.length && a.every((x, k) => x === b[k]),
  };
}

/** The scoring functions trained by default, if registered: one that retrieves, one that cannot, one in between. */
export const DEFAULT_SCORES = ['scaled_dot', 'linear_concat', 'additive'];
/** The task shown by default, if registered: the one where linear concat fails. */
export const DEFAULT_TASK = 'recall';
/** Model width d (a multiple of every head count offered) and sequences per step. */
export const WIDTH = 16;
export const BATCH = 32;
export const EVAL_SIZE = 128;
export const HEADS = ['1', '2', '4'] as const;
/** Held-out token accuracy that counts as "learned". */
export const TARGET_ACCURACY = 0.95;
export const MAX_STEPS = 5000;
/** The learning rates the page (and its URL) holds; the core accepts any finite rate > 0. */
export const LR_MIN = 1e-6;
export const LR_MAX = 1e9;

export function makeSpec(tasks: readonly string[], scores: readonly string[], normalizers: readonly string[]) {
  return {
    task: choice(tasks, tasks.includes(DEFAULT_TASK) ? DEFAULT_TASK : tasks[0]!),
    scores: nameSet(scores, DEFAULT_SCORES),
    normalizer: choice(normalizers, normalizers.includes('softmax') ? 'softmax' : normalizers[0]!),
    causal: bool(false),
    seed: int(7, 0, 999999),
    steps: int(400, 1, MAX_STEPS),
    lr: num(0.02, LR_MIN, LR_MAX, { digits: 6 }),
    length: int(6, 3, 16),
    layers: int(1, 1, 4),
    heads: choice(HEADS, '1'),
    example: int(0, 0, EVAL_SIZE - 1),
    layer: int(1, 1, 4),
    head: int(1, 1, 4),
  };
}
export type Ch11Spec = ReturnType<typeof makeSpec>;
type Values = { [K in keyof Ch11Spec]: Ch11Spec[K] extends FieldSpec<infer T> ? T : never };

/** The viewed layer and head stay inside the model (1-based in the URL and the controls). */
export function normalize(v: Values): Values {
  return { ...v, layer: Math.min(v.layer, v.layers), head: Math.min(v.head, Number(v.heads)) };
}

/** Trainer options of one run (the scoring function aside); `lr` may be the reader's raw, unchecked entry. */
export function trainerOptions(v: Readonly<Values>, score: string, lr: number = v.lr): Record<string, unknown> {
  return {
    task: v.task, score, normalizer: v.normalizer, mask: v.causal ? 'causal' : 'none', seed: v.seed, lr,
    length: v.length, width: WIDTH, heads: Number(v.heads), layers: v.layers, batch: BATCH, evalSize: EVAL_SIZE,
  };
}

/** Held-out evaluations every this many steps: about 40 points per curve. */
export function evalEvery(steps: number): number {
  return Math.max(1, Math.round(steps / 40));
}

/** First evaluated step with token accuracy >= TARGET_ACCURACY, or null. */
export function stepsToTarget(evals: readonly TrainEval[]): number | null {
  return evals.find((e) => e.tokenAccuracy >= TARGET_ACCURACY)?.step ?? null;
}

/** Upper end of the loss axis: the largest finite loss, rounded up to a half. */
export function lossCeiling(evals: readonly TrainEval[]): number {
  const m = Math.max(0.5, ...evals.map((e) => e.loss).filter(Number.isFinite));
  return Math.ceil(m * 2) / 2;
}

/** Parses a typed learning rate: a number (NaN for anything else, so the core names it). */
export function parseRate(text: string): number {
  const t = text.trim();
  return t === '' ? NaN : Number(t);
}
