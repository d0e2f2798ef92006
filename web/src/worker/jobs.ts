/**
 * The tutorial's own long computations that are not one module call (protocol.ts, 'job'),
 * run in the worker so the page never blocks; the page runs the same functions itself where
 * module workers are unavailable. No worker globals, no DOM: the Node tests drive them with
 * the real module. Each job is one entry here (name -> function of the loaded module and the
 * request's arguments); the worker and the page look jobs up by this table only.
 * - broadcastAdditive: chapter 7's textbook additive attention in JavaScript (it materialises
 *   (L_q, L_k, d_h) tensors; the comparison the chapter times against the core).
 * - saturation: chapter 3's softmax saturation curves for one L_k (96 forward calls).
 * - favorCurve: chapter 8's FAVOR+ error against softmax for m = 4 ... 4096 (11 calls).
 * - windowCurve: chapter 8's window + global + random pattern, error and kept fraction for
 *   w = 0 ... 15 at one seed, g and r (17 calls; a dragged g or r asks for it).
 * - variance: chapter 3's Monte Carlo run, kept in the worker between requests under the
 *   page's name for it, advanced by up to `budgetMs` per request (the page draws each answer).
 */
import type { Matrix, QkScope } from '@qkscope/wasm';
import { type AdditiveParams, broadcastAdditive } from '../chapters/ch7-cost/model';
import { saturation, VarianceRun, type MomentsState } from '../chapters/ch3-scaling/model';
import { favorErrorCurve, SPARSE_L, windowCurve } from '../chapters/ch8-beyond/model';

/** Arguments of a variance request. A new seed or sample count restarts the named run. */
export interface VarianceStep {
  run: string;
  seed: number;
  pairs: number;
  /** Milliseconds of work this request may take (at least one batch runs). */
  budgetMs: number;
}

/** The state of a variance run after a request: enough for the page to draw it. */
export interface VarianceSnapshot {
  pairs: number;
  finished: boolean;
  rows: { d: number; raw: MomentsState; scaled: MomentsState; byD: MomentsState }[];
}

const runs = new WeakMap<QkScope, Map<string, { seed: number; pairs: number; run: VarianceRun }>>();

function variance(qk: QkScope, step: VarianceStep, now: () => number): VarianceSnapshot {
  if (!step || typeof step.run !== 'string') throw new RangeError('variance: expected { run, seed, pairs, budgetMs }');
  if (!Number.isInteger(step.seed) || step.seed < 0) throw new RangeError(`variance: seed must be an integer >= 0, got ${step.seed}`);
  if (!Number.isInteger(step.pairs) || step.pairs < 1 || step.pairs > 1e7) throw new RangeError(`variance: pairs must be an integer in [1, 1e7], got ${step.pairs}`);
  if (!(step.budgetMs >= 0)) throw new RangeError(`variance: budgetMs must be a number >= 0, got ${step.budgetMs}`);
  let named = runs.get(qk);
  if (!named) runs.set(qk, (named = new Map()));
  let cur = named.get(step.run);
  if (!cur || cur.seed !== step.seed || cur.pairs !== step.pairs) {
    cur = { seed: step.seed, pairs: step.pairs, run: new VarianceRun(qk, step.seed, step.pairs) };
    named.set(step.run, cur);
  }
  cur.run.run(step.budgetMs, now);
  const r = cur.run;
  return {
    pairs: r.pairs,
    finished: r.finished,
    rows: r.rows.map((x) => ({ d: x.d, raw: x.raw.state(), scaled: x.scaled.state(), byD: x.byD.state() })),
  };
}

function checkSaturation(seed: unknown, lk: unknown): [number, number] {
  if (!Number.isInteger(seed) || (seed as number) < 0) throw new RangeError(`saturation: seed must be an integer >= 0, got ${String(seed)}`);
  if (!Number.isInteger(lk) || (lk as number) < 1 || (lk as number) > 4096) throw new RangeError(`saturation: lk (L_k) must be an integer in [1, 4096], got ${String(lk)}`);
  return [seed as number, lk as number];
}

function checkFavorCurve(seed: unknown, sigma: unknown, causal: unknown): [number, number, boolean] {
  if (!Number.isInteger(seed) || (seed as number) < 0) throw new RangeError(`favorCurve: seed must be an integer >= 0, got ${String(seed)}`);
  if (typeof sigma !== 'number' || !(sigma > 0 && sigma <= 16)) throw new RangeError(`favorCurve: sigma must be a number in (0, 16], got ${String(sigma)}`);
  if (typeof causal !== 'boolean') throw new RangeError(`favorCurve: causal must be a boolean, got ${String(causal)}`);
  return [seed as number, sigma, causal];
}

function checkWindowCurve(seed: unknown, g: unknown, r: unknown): [number, number, number] {
  if (!Number.isInteger(seed) || (seed as number) < 0) throw new RangeError(`windowCurve: seed must be an integer >= 0, got ${String(seed)}`);
  for (const [name, x] of [['g', g], ['r', r]] as const)
    if (!Number.isInteger(x) || (x as number) < 0 || (x as number) > SPARSE_L) throw new RangeError(`windowCurve: ${name} must be an integer in [0, ${SPARSE_L}], got ${String(x)}`);
  return [seed as number, g as number, r as number];
}

/** A (rows, cols, data) matrix whose data holds rows x cols numbers, else a RangeError naming it. */
function checkMatrix(name: string, m: unknown): Matrix {
  const x = m as Matrix | undefined;
  if (!x || !Number.isInteger(x.rows) || !Number.isInteger(x.cols) || x.rows < 1 || x.cols < 1 || !ArrayBuffer.isView(x.data) || (x.data as Float32Array).length !== x.rows * x.cols)
    throw new RangeError(`broadcastAdditive: ${name} must be { rows, cols, data } with rows x cols entries`);
  return x;
}

function broadcast(args: unknown[]) {
  const [Q, K, V] = (['query', 'key', 'value'] as const).map((n, k) => checkMatrix(n, args[k]));
  const p = args[3] as AdditiveParams | undefined;
  if (!p) throw new RangeError('broadcastAdditive: params { W_q, W_k, v, b } are required');
  const W_q = checkMatrix('params.W_q', p.W_q), W_k = checkMatrix('params.W_k', p.W_k);
  const dh = W_q.rows;
  if (W_q.cols !== Q!.cols || W_k.cols !== K!.cols || W_k.rows !== dh || p.v?.length !== dh || p.b?.length !== dh || K!.rows !== V!.rows)
    throw new RangeError(`broadcastAdditive: shapes disagree (query ${Q!.rows}x${Q!.cols}, key ${K!.rows}x${K!.cols}, value ${V!.rows}x${V!.cols}, W_q ${W_q.rows}x${W_q.cols}, W_k ${W_k.rows}x${W_k.cols})`);
  // Two (L_q, L_k, d_h) float32 tensors: past 2^28 entries (1 GB each) the tab would die instead.
  if (Q!.rows * K!.rows * dh > 2 ** 28) throw new RangeError(`broadcastAdditive: L_q x L_k x d_h = ${Q!.rows * K!.rows * dh} is over 2^28`);
  return broadcastAdditive(Q!, K!, V!, p);
}

type Job = (qk: QkScope, args: unknown[], now: () => number) => unknown;

export const JOBS = {
  broadcastAdditive: ((_qk, args) => broadcast(args)) as Job,
  saturation: ((qk, args) => saturation(qk, ...checkSaturation(args[0], args[1]))) as Job,
  favorCurve: ((qk, args) => favorErrorCurve(qk, ...checkFavorCurve(args[0], args[1], args[2]))) as Job,
  windowCurve: ((qk, args) => windowCurve(qk, ...checkWindowCurve(args[0], args[1], args[2]))) as Job,
  variance: ((qk, args, now) => variance(qk, args[0] as VarianceStep, now)) as Job,
} satisfies Record<string, Job>;

export type JobName = keyof typeof JOBS;
export const JOB_NAMES = Object.keys(JOBS) as JobName[];

/** Runs job `name`; an unknown name is a RangeError that lists the known ones. */
export function runJob(qk: QkScope, name: string, args: unknown[], now: () => number = () => performance.now()): unknown {
  if (!Object.hasOwn(JOBS, name)) throw new RangeError(`worker: unknown job '${String(name)}' (known: ${JOB_NAMES.join(', ')})`);
  return JOBS[name as JobName](qk, Array.isArray(args) ? args : [], now);
}
