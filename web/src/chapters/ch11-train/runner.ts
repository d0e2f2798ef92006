/**
 * The ablation's training loop on the page side (no DOM): one run per scoring function,
 * trained side by side in the page's Web Worker through its training channel
 * (web/src/worker/train-runs.ts), a chunk of steps per request, round-robin, so a pause takes
 * effect within one chunk. Where module workers are unavailable the same TrainRuns runs on
 * this thread with a budget well under a frame, and the loop yields to the page between chunks.
 */
import type { QkScope } from '@qkscope/wasm';
import { qkWorker } from '../../worker/client';
import { TrainRuns } from '../../worker/train-runs';
import type { TrainEval, TrainOp, TrainProgress, TrainView } from '../../worker/protocol';
import { evalEvery } from './model';

export interface TrainBackend {
  train<T>(op: TrainOp, channel?: string): Promise<T>;
  /** Milliseconds of stepping per request. */
  budgetMs: number;
  /** True when requests run on this thread (the loop then yields a frame between them). */
  local: boolean;
}

let localRuns: TrainRuns | null = null;

/** The page's worker when there is one, else this thread. */
export function trainBackend(qk: QkScope): TrainBackend {
  const w = qkWorker();
  if (w) return { train: (op, channel) => w.train(op, channel), budgetMs: 60, local: false };
  localRuns ??= new TrainRuns(qk, () => performance.now());
  const runs = localRuns;
  return { train: (op) => runs.run(op) as Promise<never>, budgetMs: 8, local: true };
}

/** What the figure shows of one run. */
export interface RunRecord {
  score: string;
  /** Run name in the worker (unique per session). */
  id: string;
  steps: number;
  evals: TrainEval[];
  stepMs: number;
  diverged: boolean;
  message: string;
  last: TrainProgress | null;
}

export type SessionStatus = 'starting' | 'running' | 'paused' | 'done' | 'failed';

let sessions = 0;

export class TrainSession {
  status: SessionStatus = 'starting';
  readonly runs: RunRecord[];
  private loop: Promise<void> | null = null;
  private disposed = false;

  /**
   * @param options trainer options per scoring function
   * @param total steps per run
   * @param onUpdate called after each round of chunks (and on every status change)
   * @param onError a request failed (bad options: the core's RangeError)
   */
  constructor(
    private readonly backend: TrainBackend,
    private readonly options: (score: string) => Record<string, unknown>,
    scores: readonly string[],
    readonly total: number,
    private view: TrainView,
    private readonly onUpdate: (s: TrainSession) => void,
    private readonly onError: (e: unknown) => void,
  ) {
    const n = ++sessions;
    this.runs = scores.map((score) => ({ score, id: `c11-${n}-${score}`, steps: 0, evals: [], stepMs: 0, diverged: false, message: '', last: null }));
  }

  get evalEvery(): number {
    return evalEvery(this.total);
  }

  /** Creates the runs (step-0 evaluation), then trains until done, paused or disposed. */
  async start(): Promise<void> {
    try {
      for (const r of this.runs) {
        const p = await this.backend.train<TrainProgress>({ op: 'create', run: r.id, options: this.options(r.score), view: this.view });
        if (this.disposed) return;
        this.apply(r, p);
      }
    } catch (e) {
      return this.fail(e);
    }
    this.status = 'running';
    this.onUpdate(this);
    this.loop = this.train();
  }

  pause(): void {
    if (this.status === 'running') this.status = 'paused';
    this.onUpdate(this);
  }

  resume(): void {
    if (this.status !== 'paused') return;
    this.status = 'running';
    this.onUpdate(this);
    // The previous loop ends within one chunk of the pause; start a new one after it.
    this.loop = (this.loop ?? Promise.resolve()).then(() => this.train());
  }

  /** Stops and frees the runs in the worker. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const r of this.runs) void this.backend.train({ op: 'drop', run: r.id }).catch(() => undefined);
  }

  /** Shows another example, layer or head; a paused or finished run answers at once. */
  async setView(view: TrainView): Promise<void> {
    this.view = view;
    if (this.status === 'running' || this.status === 'starting') return;  // the next chunk brings it
    try {
      for (const r of this.runs) {
        const p = await this.backend.train<TrainProgress>({ op: 'view', run: r.id, view }, `${r.id}-view`);
        if (this.disposed) return;
        r.last = p;
      }
      this.onUpdate(this);
    } catch (e) {
      if ((e as Error).name !== 'AbortError') this.onError(e);
    }
  }

  private async train(): Promise<void> {
    try {
      while (this.status === 'running' && !this.disposed) {
        const open = this.runs.filter((r) => !r.diverged && r.steps < this.total);
        if (open.length === 0) {
          this.status = 'done';
          break;
        }
        for (const r of open) {
          const op: TrainOp = { op: 'step', run: r.id, steps: this.total - r.steps, evalEvery: this.evalEvery, budgetMs: this.backend.budgetMs, view: this.view, total: this.total };
          const p = await this.backend.train<TrainProgress>(op);
          if (this.disposed) return;
          this.apply(r, p);
          if (this.backend.local) await new Promise((res) => setTimeout(res, 0));
        }
        this.onUpdate(this);
      }
    } catch (e) {
      return this.fail(e);
    }
    if (!this.disposed) this.onUpdate(this);
  }

  private apply(r: RunRecord, p: TrainProgress): void {
    r.steps = p.steps;
    r.stepMs += p.stepMs;
    // A non-finite evaluation (the last good parameters overflow) is not a point of the curve.
    for (const e of p.evals) {
      if (Number.isFinite(e.loss)) r.evals.push(e);
      else r.diverged = true;
    }
    r.diverged ||= p.diverged;
    r.message = p.message || r.message;
    r.last = p;
  }

  private fail(e: unknown): void {
    if (this.disposed) return;
    this.status = 'failed';
    this.onError(e);
    this.onUpdate(this);
  }
}
