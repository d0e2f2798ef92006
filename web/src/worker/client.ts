/**
 * A small promise API over the qkscope worker (qk.worker.ts): the page asks, the worker
 * computes, nothing long runs on the main thread. Requests on a named channel are coalesced
 * (coalesce.ts): a newer one replaces the one still waiting, which rejects with name
 * 'AbortError'. Errors keep their class: bad input rejects with the RangeError (same message)
 * that wasm/qkscope.js throws, and the worker stays usable afterwards.
 *
 *   const w = qkWorker();                                   // null where module workers fail
 *   const r = await w.call('attention', [options], 'c7');   // AttentionResult
 *   const t = await w.time('forward', [options], 3, 1200);  // { warm, times } in ms, in the worker
 *   const s = await w.job('saturation', [seed, lk], 'c3');  // a job of jobs.ts (the tutorial's own code)
 *   const p = await w.train({ op: 'step', run: 'a', steps: 50, evalEvery: 25, budgetMs: 80, view });  // TrainProgress
 */
import { Coalescer } from './coalesce';
import type { JobName } from './jobs';
import type { TimedMethod, TrainOp, WorkerMethod, WorkerRequest, WorkerResponse, WorkerTiming } from './protocol';

/** What the client needs of a Worker (a MessagePort or a test double works too). */
export interface Port {
  postMessage(message: WorkerRequest): void;
  addEventListener(type: 'message', listener: (e: MessageEvent<WorkerResponse>) => void): void;
  /** A worker whose script failed to load or threw at the top level. */
  addEventListener(type: 'error', listener: (e: Event) => void): void;
  terminate?(): void;
}

export class QkWorker {
  private nextId = 1;
  private readonly open = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  private readonly channels = new Coalescer();
  private failed: Error | null = null;

  constructor(private readonly port: Port) {
    port.addEventListener('message', (e) => {
      const res = e.data;
      const p = this.open.get(res.id);
      if (!p) return;
      this.open.delete(res.id);
      if (res.ok) p.resolve(res.value);
      else {
        const err = res.error.name === 'RangeError' ? new RangeError(res.error.message) : new Error(res.error.message);
        if (res.error.name !== 'RangeError' && res.error.name !== 'Error') err.name = res.error.name;
        p.reject(err);
      }
    });
    port.addEventListener('error', (e) => {
      this.failed = new Error(`qkscope worker failed: ${(e as ErrorEvent).message ?? 'could not start'}`);
      for (const p of this.open.values()) p.reject(this.failed);
      this.open.clear();
    });
  }

  /** Runs qk[method](...args) in the worker; resolves to its result (typed arrays transferred). */
  call<T = unknown>(method: WorkerMethod, args: unknown[], channel?: string): Promise<T> {
    return this.channels.submit(channel, () => this.send<T>({ id: 0, kind: 'call', method, args }));
  }

  /** Runs one of the tutorial's jobs (jobs.ts) in the worker; resolves to its result. */
  job<T = unknown>(job: JobName, args: unknown[], channel?: string): Promise<T> {
    return this.channels.submit(channel, () => this.send<T>({ id: 0, kind: 'job', job, args }));
  }

  /** Times method(...args) in the worker: one warm-up, then reps calls (1 if the warm-up took over slowMs / 3). */
  time(method: TimedMethod, args: unknown[], reps: number, slowMs: number, channel?: string): Promise<WorkerTiming> {
    return this.channels.submit(channel, () => this.send<WorkerTiming>({ id: 0, kind: 'time', method, args, reps, slowMs }));
  }

  /**
   * One operation of the training channel (protocol.ts TrainOp, worker side train-runs.ts).
   * Steps must not be dropped, so training requests are usually sent without a channel (in
   * order); a `channel` coalesces them like `call` (e.g. the attention view of a paused run).
   */
  train<T = unknown>(op: TrainOp, channel?: string): Promise<T> {
    return this.channels.submit(channel, () => this.send<T>({ id: 0, kind: 'train', op }));
  }

  terminate(): void {
    this.port.terminate?.();
    for (const p of this.open.values()) p.reject(new Error('worker terminated'));
    this.open.clear();
  }

  private send<T>(req: WorkerRequest): Promise<T> {
    if (this.failed) return Promise.reject(this.failed);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.open.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.port.postMessage({ ...req, id });
    });
  }
}

let shared: QkWorker | null | undefined;

/** The page's one worker, started on first use; null where module workers are unavailable. */
export function qkWorker(): QkWorker | null {
  if (shared !== undefined) return shared;
  try {
    shared = new QkWorker(new Worker(new URL('./qk.worker.ts', import.meta.url), { type: 'module' }));
  } catch {
    shared = null;
  }
  return shared;
}
