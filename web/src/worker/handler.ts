/**
 * The worker's side of the protocol (protocol.ts), without the worker globals so that the
 * Node tests can drive it with the real module: runs one request against a loaded QkScope.
 * Errors become { name, message } (the client rebuilds a RangeError or Error from them); the
 * module stays usable, as after any error of wasm/qkscope.js.
 */
import type { QkScope, QkScopeTiled } from '@qkscope/wasm';
import type { TimedMethod, WorkerMethod, WorkerRequest, WorkerResponse, WorkerTiming } from './protocol';
import { TrainRuns } from './train-runs';
import { JOB_NAMES, runJob } from './jobs';

const METHODS: readonly WorkerMethod[] = ['forward', 'backward', 'attention', 'attentionBackward', 'multiHeadForward', 'linearAttention'];
const TIMED: readonly TimedMethod[] = ['forward', 'backward', 'attention', 'attentionBackward', ...JOB_NAMES];

type Fn = (...args: unknown[]) => unknown;

/** The synchronous function behind a timed method (the tiled module's for the fast calls, jobs.ts for a job). */
async function timedFn(qk: QkScope, method: TimedMethod, now: () => number): Promise<Fn> {
  if ((JOB_NAMES as readonly string[]).includes(method)) return (...args: unknown[]) => runJob(qk, method, args, now);
  if (method === 'attention' || method === 'attentionBackward') {
    const tiled: QkScopeTiled = await qk.tiled();
    return tiled[method] as Fn;
  }
  return qk[method as 'forward' | 'backward'] as Fn;
}

/** The trainers of each loaded module (one per worker; Node tests may load one module). */
const trainRuns = new WeakMap<QkScope, TrainRuns>();

async function run(req: WorkerRequest, qk: QkScope, now: () => number): Promise<unknown> {
  if (req.kind === 'train') {
    let runs = trainRuns.get(qk);
    if (!runs) trainRuns.set(qk, (runs = new TrainRuns(qk, now)));
    return runs.run(req.op);
  }
  if (req.kind === 'job') return runJob(qk, req.job, req.args, now);
  if (req.kind === 'call') {
    if (!METHODS.includes(req.method)) throw new RangeError(`worker: unknown method '${String(req.method)}' (known: ${METHODS.join(', ')})`);
    return await (qk[req.method] as Fn)(...req.args);
  }
  if (!TIMED.includes(req.method)) throw new RangeError(`worker: cannot time '${String(req.method)}' (known: ${TIMED.join(', ')})`);
  if (!Number.isInteger(req.reps) || req.reps < 1) throw new RangeError(`worker: reps must be an integer >= 1, got ${req.reps}`);
  const fn = await timedFn(qk, req.method, now);
  let t0 = now();
  const first = fn(...req.args);  // warm-up: a bad input throws here, before any timing
  const out: WorkerTiming = { warm: now() - t0, times: [], bytes: resultBytes(first) };
  const n = out.warm > req.slowMs / 3 ? 1 : req.reps;
  for (let r = 0; r < n; r++) {
    t0 = now();
    fn(...req.args);
    out.times.push(now() - t0);
  }
  return out;
}

/** Answers one request; never throws. */
export async function handle(req: WorkerRequest, qk: QkScope, now: () => number): Promise<WorkerResponse> {
  try {
    return { id: req.id, ok: true, value: await run(req, qk, now) };
  } catch (e) {
    const err = e instanceof Error ? e : new Error(String(e));
    return { id: req.id, ok: false, error: { name: err.name, message: err.message } };
  }
}

/** Total byteLength of the typed arrays inside a result (what one call handed back). */
export function resultBytes(value: unknown): number {
  if (ArrayBuffer.isView(value)) return value.byteLength;
  if (value && typeof value === 'object') return Object.values(value).reduce((n: number, v) => n + resultBytes(v), 0);
  return 0;
}

/** The ArrayBuffers inside a result, to transfer instead of copy. */
export function transferables(value: unknown, out: ArrayBuffer[] = []): ArrayBuffer[] {
  if (ArrayBuffer.isView(value)) {
    if (value.buffer instanceof ArrayBuffer && !out.includes(value.buffer)) out.push(value.buffer);
  } else if (value && typeof value === 'object') {
    for (const v of Object.values(value)) transferables(v, out);
  }
  return out;
}
