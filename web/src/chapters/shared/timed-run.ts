/**
 * The Run button of a timing figure: measures `tasks` (web/src/model/timing.ts), keeps a
 * status line up to date, hands each result to the figure, and re-enables the button.
 * A newer run (or a re-render) makes `stale()` true: then results are dropped silently.
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
}

export async function runTimed(r: TimedRun): Promise<void> {
  r.button.disabled = true;
  r.status.dataset.done = 'false';
  r.status.textContent = fill(r.text.running, { done: 0, total: r.tasks.length });
  await measure(r.tasks, r.reps, (res, done, total) => {
    if (r.stale()) return;
    r.onResult(res);
    r.status.textContent = fill(r.text.running, { done, total });
  }, r.stale);
  if (r.stale()) return;
  r.button.disabled = false;
  r.status.textContent = fill(r.text.done, { reps: r.reps });
  r.status.dataset.done = 'true';
}
