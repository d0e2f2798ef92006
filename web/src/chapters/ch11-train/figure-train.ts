/**
 * Figure 11.1, the ablation: one tiny attention-only model per chosen scoring function,
 * trained side by side on a generated task in the page's Web Worker (runner.ts), with live
 * held-out loss and accuracy curves (one series per function, paths rewritten in place while
 * training), the attention map of a held-out example per function, and a results table.
 * A diverged run stops and says why; its curve ends at its last good evaluation.
 */
import type { TaskInfo } from '@qkscope/wasm';
import { fill } from '../../i18n';
import { coreMessage } from '../../i18n/core-errors';
import { LineChart, type LineSeries } from '../../charts/line';
import type { FigureData } from '../../charts/export';
import { FigureFrame } from '../shared/figure';
import { h, liveRegion, testId } from '../shared/dom';
import type { Store } from '../shared/store';
import type { ChapterContext } from '../types';
import { type Ch11Spec, TARGET_ACCURACY, lossCeiling, stepsToTarget, trainerOptions } from './model';
import { type TrainBackend, TrainSession } from './runner';
import { scoreLabel, settingsControls } from './settings';
import { AttentionPanels } from './attention';
import { ResultsTable } from './results';
import type { Ch11Text } from './en';

type Ctx = ChapterContext<Ch11Text>;

export function trainFigure(ctx: Ctx, store: Store<Ch11Spec>, tasks: readonly TaskInfo[], backend: TrainBackend): HTMLElement {
  const t = ctx.t.fig;
  const settings = settingsControls(ctx, store, tasks, backend);
  const trainButton = testId(h('button', { type: 'button', className: 'button primary', textContent: t.train }), 'c11-train');
  const pauseButton = testId(h('button', { type: 'button', className: 'button', textContent: t.pause, disabled: true }), 'c11-pause');
  const clearButton = testId(h('button', { type: 'button', className: 'button', textContent: t.clear, disabled: true }), 'c11-clear');
  const status = testId(h('p', { className: 'hint run-status', textContent: t.idle }), 'c11-status');
  const live = testId(liveRegion(), 'c11-live');
  const error = testId(h('p', { className: 'c11-error', hidden: true }), 'c11-run-error');
  error.setAttribute('role', 'alert');
  const lossChart = new LineChart('c11-loss');
  const accChart = new LineChart('c11-accuracy');
  const attention = new AttentionPanels(ctx, store);
  const results = new ResultsTable(ctx);
  const panels = h('div', { className: 'panels c11-curves' },
    h('div', { className: 'panel' }, h('h3', { textContent: t.lossTitle }), lossChart.el),
    h('div', { className: 'panel' }, h('h3', { textContent: t.accTitle }), accChart.el));

  let session: TrainSession | null = null;
  let announced = -1;

  const label = (score: string, s: TrainSession, k: number) => (s.runs[k]!.diverged ? fill(t.divergedLabel, { name: scoreLabel(ctx, score) }) : scoreLabel(ctx, score));

  const drawCharts = (s: TrainSession) => {
    const finished = s.status !== 'running' && s.status !== 'starting';
    const series = (pick: (e: TrainSession['runs'][number]['evals'][number]) => number): LineSeries[] => s.runs.map((r, k) => ({
      id: r.score, label: label(r.score, s, k), color: ctx.qk.scoreFunctions.findIndex((f) => f.name === r.score) % 7, dashed: r.score === 'linear_concat',
      markers: finished, points: r.evals.map((e) => ({ x: e.step, y: pick(e) })),
    }));
    const x = { label: t.axisStep, domain: [0, s.total] as [number, number] };
    const yMax = lossCeiling(s.runs.flatMap((r) => r.evals));
    lossChart.update({ label: t.lossLabel, x, y: { label: t.axisLoss, domain: [0, yMax] }, series: series((e) => e.loss), height: 280 });
    accChart.update({ label: t.accLabel, x, y: { label: t.axisAcc, domain: [0, 1] }, series: series((e) => e.tokenAccuracy), height: 280 });
  };

  const describe = (s: TrainSession): string => {
    const done = s.runs.reduce((n, r) => n + (r.diverged ? s.total : r.steps), 0);
    const pct = Math.round((100 * done) / (s.total * s.runs.length));
    const steps = s.runs.map((r) => fill(t.progressRun, { name: scoreLabel(ctx, r.score), steps: r.steps, total: s.total })).join(' · ');
    const text = { starting: t.starting, running: t.running, paused: t.paused, done: t.done, failed: t.failed }[s.status];
    return fill(text, { pct, steps });
  };

  let attached = false;
  const onUpdate = (s: TrainSession) => {
    if (s !== session) return;
    // The reader left the page (another chapter, a language switch): stop training there.
    if (!frame.el.isConnected) {
      if (attached) stop();
      return;
    }
    attached = true;
    drawCharts(s);
    attention.update(s);
    results.update(s);
    status.textContent = describe(s);
    status.dataset.status = s.status;
    const done = s.runs.reduce((n, r) => n + (r.diverged ? s.total : r.steps), 0) / (s.total * s.runs.length);
    // The live region speaks at quarters and at every change of state, not at every chunk.
    const quarter = s.status === 'running' ? Math.floor(done * 4) : -1;
    if (quarter !== announced) {
      announced = quarter;
      live.textContent = status.textContent;
    }
    trainButton.disabled = s.status === 'starting' || s.status === 'running' || !settings.valid();
    pauseButton.disabled = s.status !== 'running' && s.status !== 'paused';
    pauseButton.textContent = s.status === 'paused' ? t.resume : t.pause;
    clearButton.disabled = false;
  };

  const stop = () => {
    session?.dispose();
    session = null;
    announced = -1;
  };

  const clear = () => {
    stop();
    status.textContent = t.idle;
    status.dataset.status = 'idle';
    live.textContent = t.cleared;
    error.hidden = true;
    attention.clear();
    results.clear();
    panels.hidden = true;
    pauseButton.disabled = true;
    pauseButton.textContent = t.pause;
    clearButton.disabled = true;
    trainButton.disabled = !settings.valid();
  };

  const start = () => {
    if (!settings.valid()) return;
    stop();
    error.hidden = true;
    panels.hidden = false;
    const v = store.get();
    const s = new TrainSession(backend, (score) => trainerOptions(v, score), v.scores, v.steps, attention.view(), onUpdate, (e) => {
      error.textContent = fill(t.runError, { message: coreMessage(ctx.lang, e) });
      error.hidden = false;
    });
    session = s;
    attention.prepare(s);
    results.prepare(s);
    void s.start();
    onUpdate(s);
  };

  trainButton.addEventListener('click', start);
  pauseButton.addEventListener('click', () => {
    if (session?.status === 'running') session.pause();
    else session?.resume();
  });
  clearButton.addEventListener('click', clear);
  attention.onView = (view) => void session?.setView(view);
  // Changing what is trained ends the current runs (their curves would no longer match the settings).
  const TRAINING_KEYS = ['task', 'scores', 'normalizer', 'causal', 'seed', 'steps', 'lr', 'length', 'layers', 'heads'] as const;
  store.on((_, changed) => {
    if (TRAINING_KEYS.some((k) => changed.has(k)) && session) {
      clear();
      live.textContent = status.textContent = t.settingsChanged;
    }
  });
  settings.el.addEventListener('c11-validity', () => {
    if (!session || session.status === 'done' || session.status === 'failed' || session.status === 'paused') trainButton.disabled = !settings.valid();
  });

  const frame = new FigureFrame(ctx.cat, {
    id: 'figure-c11-train',
    title: t.title,
    caption: t.caption,
    onReset: () => {
      store.reset();
      settings.reset();
      clear();
    },
    charts: () => [
      { title: t.lossTitle, parts: lossChart.parts() },
      { title: t.accTitle, parts: accChart.parts() },
      ...attention.charts(),
    ],
    // One tidy table: the curves (row 'curve', one per evaluation) and the results (row 'result').
    data: (): FigureData => {
      const runs = session?.runs ?? [];
      const columns = ['row', 'score', 'step', 'heldout_loss', 'token_accuracy', 'sequence_accuracy', 'steps_to_95', 'ms_per_step', 'diverged', 'message'];
      const curves = runs.flatMap((r) => r.evals.map((e) => ['curve', r.score, e.step, e.loss, e.tokenAccuracy, e.sequenceAccuracy, null, null, null, null]));
      const table = runs.map((r) => {
        const last = r.evals.at(-1);
        return ['result', r.score, r.steps, last?.loss ?? null, last?.tokenAccuracy ?? null, last?.sequenceAccuracy ?? null,
          stepsToTarget(r.evals), r.steps ? r.stepMs / r.steps : null, r.diverged, r.message || null];
      });
      const rows = [...curves, ...table];
      return { columns, rows, json: { settings: { ...store.get(), targetAccuracy: TARGET_ACCURACY }, columns, rows } };
    },
  });
  panels.hidden = true;
  frame.body.append(
    settings.el,
    h('div', { className: 'run-row c11-run-row' }, trainButton, pauseButton, clearButton, status),
    live, error, panels, attention.el, results.el,
  );
  return frame.el;
}
