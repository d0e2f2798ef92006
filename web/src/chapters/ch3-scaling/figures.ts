/**
 * Chapter 3's figures:
 * - Figure 3.1: a live Monte Carlo run (through forward()) of Var(q.k) for d in {16, 64,
 *   256, 512}, unscaled, divided by sqrt(d) and divided by d; a table and a log–log chart.
 * - Figure 3.2: softmax saturation against d: mean max weight and mean softmax-Jacobian
 *   norm per row, for the three scalings, over L_k keys.
 */
import { fill } from '../../i18n';
import { LineChart, type LineSeries } from '../../charts/line';
import type { FigureData } from '../../charts/export';
import { fixed, sig as sigText } from '../../model/format';
import type { ChapterContext } from '../types';
import type { Store } from '../shared/store';
import { h, prefersReducedMotion, testId } from '../shared/dom';
import { FigureFrame } from '../shared/figure';
import { controlGroup, integer, radios, slider } from '../shared/controls';
import { MC_DIMS, type McRow, Moments, SAT_DIMS, type SaturationPoint, type Scaling, VarianceRun, saturation, uniformLimit } from './model';
import { qkWorker } from '../../worker/client';
import type { VarianceSnapshot } from '../../worker/jobs';
import type { Ch3Spec } from './model';
import type { Ch3Text } from './en';

type Ctx = ChapterContext<Ch3Text>;

/** Numbers for the table: 3 significant digits, tiny ones in scientific notation. */
const sig = (x: number) => sigText(x, 3, { tiny: 1e-4, expDigits: 2 });

/** Figure 3.1: the Monte Carlo variance table and chart. */
export function varianceFigure(ctx: Ctx, store: Store<Ch3Spec>): HTMLElement {
  const t = ctx.t.fig1;
  const c = ctx.cat.common;
  const resample = testId(h('button', { type: 'button', className: 'button', textContent: t.resample }), 'c3-resample');
  resample.addEventListener('click', () => store.set({ seed: (store.get().seed + 1) % 1_000_000 }));
  const controls = controlGroup(c.controls,
    radios(store, 'samples', { id: 'c3-samples', label: t.samples, options: [['1000', '1 000'], ['10000', '10 000'], ['100000', '100 000']] }),
    h('div', { className: 'control c3-seed' }, integer(store, 'seed', { id: 'c3-seed', label: c.seed, min: 0, max: 999_999 }), resample));

  const progress = testId(h('p', { className: 'hint c3-progress' }), 'c3-progress');
  const table = testId(h('table', { className: 'row-stats c3-table' }), 'c3-table');
  const head = h('tr', {}, ...[t.colD, t.colRaw, t.colStd, t.colScaled, t.colByD].map((x) => h('th', { scope: 'col', textContent: x })));
  const body = h('tbody');
  table.append(h('caption', { className: 'sr-only', textContent: t.tableCaption }), h('thead', {}, head), body);
  const chart = new LineChart('c3-variance');
  let run: { rows: McRow[]; pairs: number; finished: boolean } | null = null;
  let frame = 0;

  const draw = () => {
    if (!run) return;
    body.replaceChildren(
      ...run.rows.map((r) => {
        const tr = h('tr', {},
          h('th', { scope: 'row', textContent: String(r.d) }),
          h('td', { textContent: sig(r.raw.variance()) }),
          h('td', { textContent: sig(Math.sqrt(r.raw.variance())) }),
          h('td', { textContent: sig(r.scaled.variance()) }),
          h('td', { textContent: sig(r.byD.variance()) }));
        tr.dataset.d = String(r.d);
        tr.dataset.raw = String(r.raw.variance());
        tr.dataset.scaled = String(r.scaled.variance());
        tr.dataset.byd = String(r.byD.variance());
        return tr;
      }),
    );
    const measured = (id: string, label: string, color: number, pick: (r: McRow) => number): LineSeries => ({
      id, label, color, points: run!.rows.map((r) => ({ x: r.d, y: pick(r) })).filter((p) => Number.isFinite(p.y)),
    });
    const theory = (id: string, label: string, color: number, f: (d: number) => number): LineSeries => ({
      id, label, color, dashed: true, markers: false, points: [8, 1024].map((d) => ({ x: d, y: f(d) })),
    });
    chart.update({
      label: t.chartLabel,
      x: { label: t.axisD, scale: 'log', ticks: [...MC_DIMS], domain: [10, 800] },
      y: { label: t.axisVar, scale: 'log', domain: [5e-4, 2000], ticks: [0.001, 0.01, 0.1, 1, 10, 100, 1000] },
      series: [
        measured('unscaled', t.seriesRaw, 0, (r) => r.raw.variance()),
        measured('scaled', t.seriesScaled, 1, (r) => r.scaled.variance()),
        measured('by-d', t.seriesByD, 2, (r) => r.byD.variance()),
        theory('theory-d', t.theoryD, 0, (d) => d),
        theory('theory-1', t.theory1, 1, () => 1),
        theory('theory-1/d', t.theoryByD, 2, (d) => 1 / d),
      ],
    });
    progress.textContent = fill(run.finished ? t.done : t.running, { pairs: run.pairs.toLocaleString('en-US').replace(/,/g, '\u2009'), batch: String(32 * 32) });
    progress.dataset.done = String(run.finished);
  };

  let generation = 0;
  /** On the page's thread (no worker, or it failed): a few batches per frame. */
  const startHere = (my: number, seed: number, pairs: number) => {
    const local = new VarianceRun(ctx.qk, seed, pairs);
    const show = () => {
      run = { rows: local.rows, pairs: local.pairs, finished: local.finished };
      draw();
    };
    if (prefersReducedMotion()) {
      local.run();
      show();
      return;
    }
    const tick = () => {
      if (my !== generation) return;
      local.run(12);
      show();
      // Stops when the reader has left the chapter's page (the figure is no longer on it).
      if (!local.finished && progress.isConnected) frame = requestAnimationFrame(tick);
    };
    tick();
  };
  const start = async () => {
    cancelAnimationFrame(frame);
    const my = ++generation;
    const s = store.get();
    const seed = s.seed;
    const pairs = Number(s.samples);
    const worker = qkWorker();
    if (!worker) return startHere(my, seed, pairs);
    // Until the worker's first answer the figure shows the new run, empty (never the old one as done).
    run = { pairs: 0, finished: false, rows: MC_DIMS.map((d) => ({ d, raw: new Moments(), scaled: new Moments(), byD: new Moments() })) };
    draw();
    // In the worker, ~40 ms of batches per request (all of it with reduced motion): the page
    // draws each answer and asks for more while the figure is on the page.
    const budgetMs = prefersReducedMotion() ? 1e9 : 40;
    try {
      for (;;) {
        const snap = await worker.job<VarianceSnapshot>('variance', [{ run: 'c3-variance', seed, pairs, budgetMs }], 'c3-variance');
        if (my !== generation) return;
        run = {
          pairs: snap.pairs, finished: snap.finished,
          rows: snap.rows.map((r) => ({ d: r.d, raw: Moments.from(r.raw), scaled: Moments.from(r.scaled), byD: Moments.from(r.byD) })),
        };
        draw();
        if (snap.finished || !progress.isConnected) return;
      }
    } catch (e) {
      // A newer run replaced this request (AbortError): that run draws. Else run it here.
      if ((e as Error).name !== 'AbortError' && my === generation) startHere(my, seed, pairs);
    }
  };

  const fig = new FigureFrame(ctx.cat, {
    id: 'figure-c3-variance',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['seed', 'samples']),
    charts: () => [{ parts: chart.parts() }],
    data: (): FigureData => {
      const rows = run?.rows ?? [];
      return {
        columns: ['d_k', 'pairs', 'var_qk', 'std_qk', 'var_qk_over_sqrt_d', 'var_qk_over_d'],
        rows: rows.map((r) => [r.d, r.raw.n, r.raw.variance(), Math.sqrt(r.raw.variance()), r.scaled.variance(), r.byD.variance()]),
        json: { seed: store.get().seed, pairsPerD: rows[0]?.raw.n ?? 0, distribution: 'q, k entries i.i.d. N(0, 1)', rows: rows.map((r) => ({ d: r.d, pairs: r.raw.n, varRaw: r.raw.variance(), varScaled: r.scaled.variance(), varByD: r.byD.variance() })) },
      };
    },
  });
  const layout = h('div', { className: 'c3-mc' }, h('div', { className: 'c3-table-box' }, h('div', { className: 'table-scroll' }, table), progress), h('div', { className: 'c3-chart' }, chart.el));
  fig.body.append(controls, layout);
  store.on((_, changed) => (changed.has('seed') || changed.has('samples')) && void start());
  // The run starts when the figure comes into view, so the reader sees it settle.
  draw();
  ctx.whenVisible(fig.el, () => void start());
  return fig.el;
}

/** Figure 3.2: saturation against d. */
export function saturationFigure(ctx: Ctx, store: Store<Ch3Spec>): HTMLElement {
  const t = ctx.t.fig2;
  const c = ctx.cat.common;
  const controls = controlGroup(c.controls,
    slider(store, 'lk', { id: 'c3-lk', label: t.lk, min: 2, max: 64, step: 1, hint: t.lkHint }));
  const maxChart = new LineChart('c3-maxweight');
  const jacChart = new LineChart('c3-jacobian');
  const summary = testId(h('p', { className: 'figure-summary' }), 'c3-sat-summary');
  /** The curves drawn, with the seed and L_k they are for (they arrive from the worker after the slider moved). */
  let data: { seed: number; lk: number; curves: Record<Scaling, SaturationPoint[]> } | null = null;
  const labels: Record<Scaling, string> = { none: t.seriesRaw, sqrt: t.seriesScaled, d: t.seriesByD };

  let asked = 0;
  /** The curves for the current seed and L_k: from the worker (stale requests dropped), else here. */
  const compute = async () => {
    const my = ++asked;
    const s = store.get();
    const worker = qkWorker();
    let next: Record<Scaling, SaturationPoint[]> | null = null;
    if (worker) {
      try {
        next = await worker.job<Record<Scaling, SaturationPoint[]>>('saturation', [s.seed, s.lk], 'c3-saturation');
      } catch (e) {
        if ((e as Error).name === 'AbortError') return;  // a newer L_k is on its way
      }
    }
    if (my !== asked) return;
    data = { seed: s.seed, lk: s.lk, curves: next ?? saturation(ctx.qk, s.seed, s.lk) };
    draw();
  };

  const draw = () => {
    const s = data!;
    const u = uniformLimit(s.lk);
    const series = (pick: 'maxWeight' | 'jacobian', flat: number): LineSeries[] => [
      ...(['none', 'sqrt', 'd'] as const).map((sc, k) => ({ id: sc, label: labels[sc], color: k, points: s.curves[sc].map((p) => ({ x: p.d, y: p[pick] })) })),
      { id: 'uniform', label: fill(t.uniform, { lk: s.lk }), color: 6, dashed: true, markers: false, points: [SAT_DIMS[0], SAT_DIMS[SAT_DIMS.length - 1]].map((d) => ({ x: d, y: flat })) },
    ];
    const x = { label: t.axisD, scale: 'log' as const, ticks: [4, 16, 64, 256, 512] };
    maxChart.update({ label: t.maxLabel, x, y: { label: t.axisMax, domain: [0, 1] }, series: series('maxWeight', u.maxWeight), height: 280 });
    jacChart.update({ label: t.jacLabel, x, y: { label: t.axisJac, domain: [0, null] }, series: series('jacobian', u.jacobian), height: 280 });
    const at = (sc: Scaling) => s.curves[sc][s.curves[sc].length - 1]!;
    summary.dataset.lk = String(s.lk);  // which L_k the curves are for (they arrive from the worker)
    summary.textContent = fill(t.summary, {
      d: SAT_DIMS[SAT_DIMS.length - 1]!,
      rawMax: fixed(at('none').maxWeight, 3), rawJac: sig(at('none').jacobian),
      sqrtMax: fixed(at('sqrt').maxWeight, 3), sqrtJac: sig(at('sqrt').jacobian),
      dMax: fixed(at('d').maxWeight, 3), uniform: fixed(u.maxWeight, 3),
    });
  };

  const fig = new FigureFrame(ctx.cat, {
    id: 'figure-c3-saturation',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['lk']),
    charts: () => [{ title: t.maxTitle, parts: maxChart.parts() }, { title: t.jacTitle, parts: jacChart.parts() }],
    data: () => {
      const d = data;
      if (!d) return { columns: [], rows: [] };
      const rows: FigureData['rows'] = [];
      for (const sc of ['none', 'sqrt', 'd'] as const) for (const p of d.curves[sc]) rows.push([sc, p.d, p.maxWeight, p.jacobian]);
      return { columns: ['scaling', 'd_k', 'mean_max_weight', 'mean_jacobian_norm'], rows, json: { seed: d.seed, keys: d.lk, series: d.curves } };
    },
  });
  const charts = h('div', { className: 'panels' },
    h('div', { className: 'panel' }, h('h3', { textContent: t.maxTitle }), maxChart.el),
    h('div', { className: 'panel' }, h('h3', { textContent: t.jacTitle }), jacChart.el));
  fig.body.append(controls, summary, charts);
  store.on((_, changed) => (changed.has('seed') || changed.has('lk')) && void compute());
  ctx.whenVisible(fig.el, () => void compute());
  return fig.el;
}
