/**
 * Messages between the page and the qkscope worker (qk.worker.ts). Plain data only: they are
 * structured-cloned, and the result's typed arrays are transferred, not copied.
 */

/** The QkScope methods the worker runs (wasm/qkscope.d.ts). */
export type WorkerMethod = 'forward' | 'backward' | 'attention' | 'attentionBackward' | 'multiHeadForward' | 'linearAttention';

/** The methods that can be timed: one synchronous call each (the tiled module once loaded). */
export type TimedMethod = 'forward' | 'backward' | 'attention' | 'attentionBackward';

export type WorkerRequest =
  | { id: number; kind: 'call'; method: WorkerMethod; args: unknown[] }
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
