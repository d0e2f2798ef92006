/**
 * Cooperative timing of work in the reader's browser (no DOM): median of warm runs, yielding
 * to the page between measurements so it stays responsive. Used by the cost chapters (7, 8).
 */

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** One thing to time: `run` does the work once (on this thread). */
export interface TimingTask {
  series: string;
  x: number;
  run: () => void;
  /**
   * Optional: the same work timed elsewhere (a Web Worker, web/src/worker/client.ts), so the
   * page never blocks: one warm-up, then `reps` runs (1 when the warm-up took over slowMs / 3).
   * When it rejects, the task is timed here with `run` instead.
   */
  remote?: (reps: number, slowMs: number) => Promise<{ warm: number; times: number[]; bytes?: number }>;
}

export interface Timing {
  series: string;
  x: number;
  /** Median of the warm runs, in milliseconds. */
  ms: number;
  runs: number;
  /** Where it was timed: in a Web Worker (the task's `remote`) or on the page's thread. */
  thread: 'worker' | 'page';
  /** Bytes of the arrays one call returned, when the worker reported them. */
  bytes?: number;
}

/** Stop measuring a series once one run takes longer than this (phones survive). */
export const SLOW_MS = 1200;

/**
 * Times each task: one warm-up run, then up to `reps` timed runs (fewer when a run is slow),
 * median reported; in a worker when the task says how (`remote`), else on this thread. Yields to the event loop between runs so the page stays responsive; a
 * series whose run exceeded SLOW_MS skips its larger sizes. Stops early when `cancelled()`.
 */
export async function measure(
  tasks: TimingTask[],
  reps: number,
  onResult: (t: Timing, done: number, total: number) => void,
  cancelled: () => boolean,
  now: () => number = () => performance.now(),
): Promise<Timing[]> {
  const out: Timing[] = [];
  const tooSlow = new Set<string>();
  const pause = () => new Promise<void>((r) => setTimeout(r, 0));
  let done = 0;
  for (const task of tasks) {
    done++;
    if (cancelled()) break;
    if (tooSlow.has(task.series)) continue;
    let warm = 0;
    let times: number[] = [];
    const remote = task.remote ? await task.remote(reps, SLOW_MS).catch(() => null) : null;
    if (cancelled()) return out;
    if (remote) ({ warm, times } = remote);
    else {
      let t0 = now();
      task.run(); // warm-up (JIT, allocation)
      warm = now() - t0;
      const n = warm > SLOW_MS / 3 ? 1 : reps;
      for (let r = 0; r < n; r++) {
        await pause();
        if (cancelled()) return out;
        t0 = now();
        task.run();
        times.push(now() - t0);
      }
    }
    const res: Timing = { series: task.series, x: task.x, ms: median(times), runs: times.length, thread: remote ? 'worker' : 'page',
      ...(remote?.bytes !== undefined ? { bytes: remote.bytes } : {}) };
    if (Math.max(warm, ...times) > SLOW_MS) tooSlow.add(task.series);
    out.push(res);
    onResult(res, done, tasks.length);
    await pause();
  }
  return out;
}

/** Powers of two from `lo` to `hi` inclusive. */
export function powersOfTwo(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let x = lo; x <= hi; x *= 2) out.push(x);
  return out;
}
