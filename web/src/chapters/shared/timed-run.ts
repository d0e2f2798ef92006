/**
 * The Run button of a timing figure: measures `tasks` (web/src/model/timing.ts), keeps a
 * status line up to date, hands each result to the figure, and re-enables the button.
 * A newer run (or a re-render) makes `stale()` true: then results are dropped silently. A run
 * also stops once its figure has left the page (the reader opened another chapter).
 */
import { fill } from '../../i18n';
import { measure, type Timing, type TimingTask } from '../../model/timing';

export interface TimedRun {
  tasks: TimingTask[];
  reps: number;
  status: HTMLElement;
  button: HTMLButtonElement;
  /** Status templates: `running` with {done} {total}, `done` with {reps}. */
  text: { running: string; done: string };
  stale: () => boolean;
  onResult: (t: Timing) => void;
  /** Work the results started (e.g. a correctness check) that the run waits for before it says done. */
  settle?: () => Promise<unknown>;
}

export async function runTimed(r: TimedRun): Promise<void> {
  // Started while the page is being built (not attached yet): "gone" means attached, then removed.
  let attached = r.status.isConnected;
  const gone = () => (r.status.isConnected ? !(attached = true) : attached);
  const stale = () => r.stale() || gone();
  r.button.disabled = true;
  r.status.dataset.done = 'false';
  r.status.textContent = fill(r.text.running, { done: 0, total: r.tasks.length });
  await measure(r.tasks, r.reps, (res, done, total) => {
    if (stale()) return;
    r.onResult(res);
    r.status.textContent = fill(r.text.running, { done, total });
  }, stale);
  if (r.settle && !stale()) await r.settle();
  if (stale()) return;
  r.button.disabled = false;
  r.status.textContent = fill(r.text.done, { reps: r.reps });
  r.status.dataset.done = 'true';
}
