/**
 * Messages between the page and the qkscope worker (qk.worker.ts). Plain data only: they are
 * structured-cloned, and the result's typed arrays are transferred, not copied.
 */
import type { JobName } from './jobs';

/** The QkScope methods the worker runs (wasm/qkscope.d.ts). */
export type WorkerMethod = 'forward' | 'backward' | 'attention' | 'attentionBackward' | 'multiHeadForward' | 'linearAttention';

/** The methods that can be timed: one synchronous call each (the tiled module once loaded), or a job (jobs.ts). */
export type TimedMethod = 'forward' | 'backward' | 'attention' | 'attentionBackward' | JobName;

export type WorkerRequest =
  | { id: number; kind: 'call'; method: WorkerMethod; args: unknown[] }
  /** One of the tutorial's own computations (jobs.ts, by name). */
  | { id: number; kind: 'job'; job: JobName; args: unknown[] }
  /** The training channel: trainers that live in the worker between requests (train-runs.ts). */
  | { id: number; kind: 'train'; op: TrainOp }
  /** One warm-up call, then `reps` timed calls (1 when the warm-up took over slowMs / 3). */
  | { id: number; kind: 'time'; method: TimedMethod; args: unknown[]; reps: number; slowMs: number };

/** Times in milliseconds, measured inside the worker (performance.now()). */
export interface WorkerTiming {
  warm: number;
  times: number[];
  /** Bytes of the typed arrays one call returned (e.g. four (L_q, L_k) copies for `forward`). */
  bytes: number;
}

export type WorkerResponse =
  | { id: number; ok: true; value: unknown }
  /** `name` is the thrown error's class ('RangeError' for bad input), `message` its text. */
  | { id: number; ok: false; error: { name: string; message: string } };

/** Which held-out attention map a training request hands back (Trainer.attention's arguments). */
export interface TrainView {
  example: number;
  layer: number;
  head: number;
}

/**
 * Operations of the training channel. A run is a Trainer (wasm/types/train.d.ts) kept in the
 * worker under a name chosen by the page, so a page can train several side by side.
 * - tasks: the core's task registry (QkScopeTrain.tasks).
 * - check: creates a trainer with `options` and frees it at once; rejects with the core's RangeError.
 * - create: (re)creates run `run`; answers its step-0 progress (held-out evaluation, attention).
 * - step: runs up to `steps` steps, stopping early once `budgetMs` of stepping has passed, and
 *   evaluates on the held-out set after every step that is a multiple of `evalEvery` (and after
 *   step `total`, the run's last).
 * - view: the attention map and tokens of `view` for the run as it stands.
 * - drop: frees run `run` (every run when omitted).
 * - charLoad: loads a trained next-character model (a parsed weights file,
 *   CharModelWeights of wasm/types/train.d.ts) under `key`; answers its CharInfo.
 * - charPredict: that model's predictions and attention for `text` (CharResult).
 */
export type TrainOp =
  | { op: 'tasks' }
  | { op: 'check'; options: Record<string, unknown> }
  | { op: 'create'; run: string; options: Record<string, unknown>; view: TrainView }
  | { op: 'step'; run: string; steps: number; evalEvery: number; budgetMs: number; view: TrainView; total?: number }
  | { op: 'view'; run: string; view: TrainView }
  | { op: 'drop'; run?: string }
  | { op: 'charLoad'; key: string; weights: unknown }
  | { op: 'charPredict'; key: string; text: string };

/** One held-out evaluation after `step` optimizer steps (EvalResult of train.d.ts). */
export interface TrainEval {
  step: number;
  loss: number;
  tokenAccuracy: number;
  sequenceAccuracy: number;
}

/** The answer of create, step and view. */
export interface TrainProgress {
  /** Optimizer steps taken so far. */
  steps: number;
  /** Training loss (nats) of each step this request ran. */
  losses: Float64Array;
  /** Held-out evaluations made by this request. */
  evals: TrainEval[];
  /** Milliseconds spent in Trainer.step by this request (evaluation excluded). */
  stepMs: number;
  diverged: boolean;
  /** Why the run stopped (empty unless diverged). */
  message: string;
  /** Attention weights (L, L) of the requested view, row-major; null when the core could not compute them (attentionError says why). */
  attention: { rows: number; cols: number; data: Float32Array } | null;
  attentionError: string;
  /** Tokens and targets (-1: not an answer position) of the viewed example. */
  tokens: Int32Array;
  targets: Int32Array;
}

/** What the page needs to know of a loaded character model (CharModel of train.d.ts). */
export interface CharInfo {
  score: string;
  /** Characters of the tokens, in token order (the last is the "other" token '#'). */
  vocabulary: string;
  /** Context length L: the model reads the last L characters. */
  context: number;
  layers: number;
  heads: number;
  width: number;
}

/** One prediction of a character model (CharPrediction of train.d.ts, every head at once). */
export interface CharResult {
  /** The text as the model read it, n characters. */
  text: string;
  /** (n, vocabulary.length): row i, the next-character probabilities after text[0..i]. */
  next: { rows: number; cols: number; data: Float32Array };
  /** (n, n) causal attention of each layer and head, layer-major: index layer * heads + head. */
  attention: { rows: number; cols: number; data: Float32Array }[];
}
