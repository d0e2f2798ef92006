/**
 * Chapter 8's figures:
 * - 8.1: softmax weights (forward()) next to the weights linear attention implies
 *   (linearAttention(): elu + 1 or FAVOR+), relative output error against m (the curve's 11
 *   calls run in the worker: a dragged sigma repaints the maps first), causal via prefix sums.
 * - 8.2: time against L: softmax through forward() and the tiled attention(), linear elu + 1
 *   and FAVOR+, all in the core; the crossover against the tiled softmax, as natively
 *   (Run button), and the length where linear attention overtakes the core's softmax.
 * - 8.3: top-k (topk_softmax) and sliding window + global tokens + BigBird random keys
 *   (sparsePattern() as the mask) through forward(): error against full softmax and the
 *   fraction of pairs kept (the window curve of a new g or r from the worker).
 */
import type { ForwardResult, Matrix } from '@qkscope/wasm';
import { fill } from '../../i18n';
import { runTimed } from '../shared/timed-run';
import { LineChart, type LineSeries } from '../../charts/line';
import { Heatmap, type HeatmapSpec } from '../../charts/heatmap';
import { type FigureData, matricesTable } from '../../charts/export';
import { fixed, sig as sigText } from '../../model/format';
import type { ChapterContext } from '../types';
import type { Store } from '../shared/store';
import { h, testId } from '../shared/dom';
import { FigureFrame } from '../shared/figure';
import { checkbox, integer, radios, slider, controlGroup } from '../shared/controls';
import type { Timing } from '../../model/timing';
import { crossoverL, favorErrorCurve, featureOptions, LIN_D, linearError, linearInputs, powersOfTwo, randn, relError, softmaxOf } from './model';
import { type SparseBase, type SparseEval, SPARSE_L, sparseBase, sparseEval, windowCurve } from './model';
import { qkWorker } from '../../worker/client';
import type { Ch8Spec } from './model';
import type { Ch8Text } from './en';

type Ctx = ChapterContext<Ch8Text>;
const REPS = 3;
/** Largest L of the quick run Figure 8.2 makes on its own when it comes into view. */
const PREVIEW_L = 256;

const sig = (x: number) => sigText(x, 3, { tiny: 1e-3 });

function weightsSpec(ctx: Ctx, values: Matrix, label: string, masked?: (i: number, j: number) => boolean): HeatmapSpec {
  const c = ctx.cat.common;
  return {
    values, masked, palette: 'unit', decimals: 2, rowAxis: c.axisQuery, colAxis: c.axisKey, label,
    cellLabel: (i, j, value) => `${label}: ${fill(c.cellLabel, { row: c.axisQuery, i, col: c.axisKey, j, value })}`,
    maskedText: c.maskedCell, legendTitle: c.legendWeight, maskedLegend: masked ? c.maskedCell : undefined,
  };
}

const panel = (title: HTMLElement | string, el: HTMLElement) => h('div', { className: 'panel' }, typeof title === 'string' ? h('h3', { textContent: title }) : title, el);

/** Figure 8.1: linear attention (elu + 1, FAVOR+) against softmax. */
export function linearFigure(ctx: Ctx, store: Store<Ch8Spec>): HTMLElement {
  const t = ctx.t.fig1;
  const softHm = new Heatmap('c8-softmax');
  const approxHm = new Heatmap('c8-approx');
  softHm.onCellFocus = (cell) => approxHm.highlight(cell);
  approxHm.onCellFocus = (cell) => softHm.highlight(cell);
  // Titled from the start (the figure draws lazily): never an empty heading.
  const titleFor = (s: { map: string; m: number }) => fill(t.approxTitle, { map: s.map === 'elu' ? t.elu : `${t.favor}, m = ${s.m}` });
  const approxTitle = h('h3', { textContent: titleFor(store.get()) });
  const chart = new LineChart('c8-error');
  const summary = testId(h('p', { className: 'figure-summary' }), 'c8-lin-summary');
  let last: { soft: ForwardResult; approx: Matrix; eluErr: number; favorErr: number } | null = null;
  let errorCurve: { key: string; errors: { m: number; err: number }[] } = { key: '', errors: [] };

  /** The curve for the current seed, sigma and causal: from the worker (stale requests dropped), else here. */
  let asked = 0;
  let pending = '';  // the key of the request in flight (a dragged m does not ask again)
  const fetchCurve = async (key: string, s: Readonly<{ seed: number; sigma: number; causal: boolean }>) => {
    const my = ++asked;
    pending = key;
    const worker = qkWorker();
    let next: { m: number; err: number }[] | null = null;
    if (worker) {
      try {
        next = await worker.job<{ m: number; err: number }[]>('favorCurve', [s.seed, s.sigma, s.causal], 'c8-favor-curve');
      } catch (e) {
        if ((e as Error).name === 'AbortError') return;  // a newer sigma is on its way
      }
    }
    if (my !== asked) return;
    pending = '';
    errorCurve = { key, errors: next ?? favorErrorCurve(ctx.qk, s.seed, s.sigma, s.causal) };
    if (last) drawCurve();
  };

  const drawCurve = () => {
    const s = store.get();
    const errors = errorCurve.errors;
    const series: LineSeries[] = [
      { id: 'favor', label: t.seriesFavor, color: 1, points: errors.map((e) => ({ x: e.m, y: Math.max(e.err, 1e-6) })) },
      { id: 'elu', label: t.seriesElu, color: 2, dashed: true, markers: false, points: [4, 4096].map((m) => ({ x: m, y: Math.max(last!.eluErr, 1e-6) })) },
    ];
    chart.update({ label: t.errorLabel, x: { label: t.axisM, scale: 'log', ticks: [4, 16, 64, 256, 1024, 4096] }, y: { label: t.axisErr, scale: 'log' }, series, height: 280,
      marker: { x: s.m, label: fill(t.marker, { m: s.m }) } });
    summary.dataset.curve = JSON.stringify(errors.map((e) => e.err));
    summary.dataset.curveFor = errorCurve.key;  // which settings the curve is for (it arrives from the worker)
  };

  const draw = () => {
    const s = store.get();
    const x = linearInputs(s.seed, s.sigma);
    const soft = softmaxOf(ctx.qk, x, s.causal);
    const shown = ctx.qk.linearAttention({ query: x.Q, key: x.K, value: x.V, causal: s.causal, weights: true, ...featureOptions(s.map, s.m, s.seed) });
    // The map shown is one of the two errors the summary states: its output is not computed again.
    const errorOf = (kind: 'elu' | 'favor', m: number) =>
      kind === s.map ? relError(shown.output.data, soft.output.data) : linearError(ctx.qk, x, soft, s.causal, kind, m, s.seed);
    const approx = shown.weights!;
    last = { soft, approx, eluErr: errorOf('elu', LIN_D), favorErr: errorOf('favor', s.m) };
    const masked = s.causal ? (i: number, j: number) => j > i : undefined;
    softHm.update(weightsSpec(ctx, soft.weights, t.softmaxTitle, masked));
    approxTitle.textContent = titleFor(s);
    approxHm.update(weightsSpec(ctx, approx, approxTitle.textContent, masked));
    summary.textContent = fill(t.summary, { elu: fixed(last.eluErr, 3), m: s.m, favor: fixed(last.favorErr, 3) });
    summary.dataset.elu = String(last.eluErr);
    summary.dataset.favor = String(last.favorErr);
    // The error curve does not depend on m or the map (a dragged m reuses it); a new seed,
    // sigma or causal asks the worker, and the old curve stays until the new one arrives.
    const key = `${s.seed},${s.sigma},${s.causal}`;
    summary.dataset.key = key;
    if (key !== errorCurve.key && key !== pending) void fetchCurve(key, { seed: s.seed, sigma: s.sigma, causal: s.causal });
    if (errorCurve.errors.length) drawCurve();
  };

  const fig = new FigureFrame(ctx.cat, {
    id: 'figure-c8-linear',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['map', 'm', 'sigma', 'causal', 'seed']),
    charts: () => [{ title: t.softmaxTitle, parts: softHm.parts() }, { title: approxTitle.textContent ?? '', parts: approxHm.parts() }, { title: t.errorTitle, parts: chart.parts() }],
    data: (): FigureData => {
      const tbl = matricesTable([['softmax', last!.soft.weights], ['linear', last!.approx]]);
      return { ...tbl, json: { settings: store.get(), weights: tbl, favorErrorByM: errorCurve.errors, eluError: last!.eluErr } };
    },
  });
  fig.body.append(
    controlGroup(ctx.cat.common.controls,
      radios(store, 'map', { id: 'c8-map', label: t.map, options: [['elu', t.elu], ['favor', t.favor]] }),
      slider(store, 'm', { id: 'c8-m', label: t.m, min: 4, max: 1024, step: 0.05, scale: 'log', format: (v) => String(v), hint: t.mHint }),
      slider(store, 'sigma', { id: 'c8-sigma', label: t.sigma, min: 0.25, max: 2, step: 0.05, format: (v) => fixed(v, 2), hint: t.sigmaHint }),
      checkbox(store, 'causal', { id: 'c8-causal', label: t.causal }),
      integer(store, 'seed', { id: 'c8-seed', label: ctx.cat.common.seed, min: 0, max: 999_999 })),
    summary,
    h('div', { className: 'panels c8-grid' }, panel(t.softmaxTitle, softHm.el), panel(approxTitle, approxHm.el), panel(t.errorTitle, chart.el)));
  store.on((_, ch) => ['map', 'm', 'sigma', 'causal', 'seed'].some((k) => ch.has(k as keyof Ch8Spec)) && draw());
  ctx.whenVisible(fig.el, draw);
  return fig.el;
}

/** Figure 8.2: time against L. */
export function timeFigure(ctx: Ctx, store: Store<Ch8Spec>): HTMLElement {
  const t = ctx.t.fig2;
  const M = 64;
  const runButton = testId(h('button', { type: 'button', className: 'button primary', textContent: t.run }), 'c8-run');
  const status = testId(h('p', { className: 'hint run-status', textContent: t.notRun }), 'c8-status');
  status.setAttribute('aria-live', 'polite');
  const summary = testId(h('p', { className: 'figure-summary' }), 'c8-time-summary');
  const chart = new LineChart('c8-time');
  const box = h('div', { className: 'panel c8-chart', hidden: true }, chart.el);
  const labels: Record<string, string> = { core: t.core, tiled: t.tiled, elu: t.elu, favor: t.favor };
  let results: Timing[] = [];
  let generation = 0;

  const draw = () => {
    box.hidden = results.length === 0;
    if (box.hidden) {
      summary.textContent = '';
      return;
    }
    const Ls = powersOfTwo(64, Math.max(...results.map((r) => r.x)));
    chart.update({
      label: t.label, x: { label: t.axisL, scale: 'log', ticks: Ls }, y: { label: t.axisMs, scale: 'log' }, height: 320,
      series: ['core', 'tiled', 'elu', 'favor'].map((id, k) => ({ id, label: labels[id]!, color: [0, 1, 2, 3][k], dashed: id === 'elu' || id === 'favor',
        points: results.filter((r) => r.series === id).map((r) => ({ x: r.x, y: Math.max(r.ms, 1e-3) })) })),
      pointLabel: (s, p) => `${s.label}: L = ${p.x}, ${sig(p.y)} ms`,
    });
    const lastL = Math.max(...results.filter((r) => r.series === 'elu').map((r) => r.x));
    const exact = results.find((r) => r.series === 'tiled' && r.x === lastL);
    const lin = results.find((r) => r.series === 'elu' && r.x === lastL);
    const cross = crossoverL(results, 'tiled', 'elu');
    summary.textContent = exact && lin
      ? `${fill(t.summary, { L: lastL, exact: sig(exact.ms), lin: sig(lin.ms) })} ${cross === null ? fill(t.noCross, { L: lastL }) : fill(t.cross, { L: cross })}`
      : '';
    summary.dataset.crossover = cross === null ? '' : String(cross);
  };

  /** Measures up to `upTo` (default: the chosen largest L); a quick preview runs on its own. */
  const run = async (upTo?: number) => {
    const my = ++generation;
    const Ls = powersOfTwo(64, upTo ?? Number(store.get().maxL));
    const D = Number(store.get().dim);
    results = [];
    draw();
    // The tiled online-softmax kernels (the browser's second module, loaded once): softmax
    // without its L x L intermediates, as the native benchmark times it against linear attention.
    const tiled = await ctx.qk.tiled();
    if (my !== generation) return;
    const tasks = Ls.flatMap((L) => {
      const Q = randn(5, 0, L, D);
      const K = randn(5, 1, L, D);
      const V = randn(5, 2, L, D);
      return [
        { series: 'core', x: L, run: () => void ctx.qk.forward({ query: Q, key: K, value: V, score: 'scaled_dot' }) },
        { series: 'tiled', x: L, run: () => void tiled.attention({ query: Q, key: K, value: V, score: 'scaled_dot' }) },
        { series: 'elu', x: L, run: () => void ctx.qk.linearAttention({ query: Q, key: K, value: V, featureMap: 'elu' }) },
        { series: 'favor', x: L, run: () => void ctx.qk.linearAttention({ query: Q, key: K, value: V, features: M, seed: 5 }) },
      ];
    });
    await runTimed({
      tasks, reps: REPS, status, button: runButton, text: upTo ? { running: t.running, done: fill(t.preview, { L: upTo }) } : t,
      stale: () => my !== generation,
      onResult: (res) => {
        results.push(res);
        draw();
      },
    });
  };
  runButton.addEventListener('click', () => void run());

  const fig = new FigureFrame(ctx.cat, {
    id: 'figure-c8-time',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['maxL', 'dim']),
    charts: () => (results.length ? [{ parts: chart.parts() }] : []),
    data: () => ({ columns: ['series', 'L', 'ms', 'runs'], rows: results.map((r) => [r.series, r.x, r.ms, r.runs]),
      json: { d: Number(store.get().dim), m: M, timings: results, crossoverL: crossoverL(results, 'tiled', 'elu') } }),
  });
  fig.body.append(
    controlGroup(ctx.cat.common.controls,
      radios(store, 'maxL', { id: 'c8-maxl', label: t.maxL, options: ['256', '512', '1024', '2048'].map((x) => [x, x] as const) }),
      radios(store, 'dim', { id: 'c8-dim', label: t.dim, options: ['64', '128'].map((x) => [x, x] as const) }),
      h('div', { className: 'control run-row' }, runButton, status)),
    summary, box);
  store.on((_, ch) => {
    // New settings: a quick run replaces the old timings (the chart is never empty).
    if (ch.has('maxL') || ch.has('dim')) void run(PREVIEW_L);
  });
  ctx.whenVisible(fig.el, () => generation === 0 && void run(PREVIEW_L));
  return fig.el;
}

/** Figure 8.3: top-k and window + global sparsity through forward(). */
export function sparseFigure(ctx: Ctx, store: Store<Ch8Spec>): HTMLElement {
  const t = ctx.t.fig3;
  const L = SPARSE_L;
  const fullHm = new Heatmap('c8-full');
  const sparseHm = new Heatmap('c8-sparse');
  fullHm.onCellFocus = (cell) => sparseHm.highlight(cell);
  sparseHm.onCellFocus = (cell) => fullHm.highlight(cell);
  const chart = new LineChart('c8-sparse-error');
  const summary = testId(h('p', { className: 'figure-summary' }), 'c8-sparse-summary');
  let cur: SparseEval | null = null;

  // The inputs and the full softmax depend on the seed only: one forward per seed, not one
  // per sparse evaluation.
  let base: SparseBase | null = null;
  // Window evaluations of one seed, g and r by w: a dragged w computes each once.
  let windows = { key: '', byW: new Map<number, SparseEval>() };
  const compute = (seed: number, pattern: 'topk' | 'window', k: number, w: number, g: number, r: number) => {
    if (base?.seed !== seed) base = sparseBase(ctx.qk, seed);
    if (pattern === 'topk') return sparseEval(ctx.qk, base, pattern, k, w, g, r);
    const key = `${seed},${g},${r}`;
    if (windows.key !== key) windows = { key, byW: new Map() };
    let e = windows.byW.get(w);
    if (!e) windows.byW.set(w, (e = sparseEval(ctx.qk, base, pattern, k, w, g, r)));
    return e;
  };

  // The top-k curve depends on the seed only (computed here, 16 calls per seed). The window
  // curve depends on seed, g and r: a new g or r asks the worker (17 calls, stale requests
  // dropped) and the chart keeps the curve it shows, named by its own g and r, until the new
  // one arrives; the first curve is computed here, so the figure is whole when first drawn.
  type Point = { kept: number; err: number };
  let topk: { key: string; points: SparseEval[] } = { key: '', points: [] };
  let win: { key: string; g: number; r: number; points: Point[] } = { key: '', g: 0, r: 0, points: [] };
  let asked = 0;
  let pending = '';
  const fetchWindow = async (key: string, seed: number, g: number, r: number) => {
    const my = ++asked;
    pending = key;
    const worker = qkWorker();
    let next: Point[] | null = null;
    if (worker) {
      try {
        next = await worker.job<Point[]>('windowCurve', [seed, g, r], 'c8-window-curve');
      } catch (e) {
        if ((e as Error).name === 'AbortError') return;  // a newer g or r is on its way
      }
    }
    if (my !== asked) return;
    pending = '';
    win = { key, g, r, points: next ?? windowCurve(ctx.qk, seed, g, r) };
    if (cur) drawChart();
  };

  const drawChart = () => {
    const c = cur!;
    chart.update({
      label: t.chartLabel, x: { label: t.axisFrac, domain: [0, 1] }, y: { label: t.axisErr, domain: [0, null] }, height: 280,
      series: [
        { id: 'topk', label: t.seriesTopk, color: 1, points: topk.points.map((p) => ({ x: p.kept, y: p.err })) },
        { id: 'window', label: fill(t.seriesWindow, { g: win.g, r: win.r }), color: 2, dashed: true, points: win.points.map((p) => ({ x: p.kept, y: p.err })) },
      ],
      marker: { x: c.kept, label: t.current },
    });
    summary.dataset.windowCurveFor = win.key;  // which settings the window curve is for (it arrives from the worker)
  };

  let fullDrawn: ForwardResult | null = null;
  const draw = () => {
    const s = store.get();
    const topkKey = String(s.seed);
    const winKey = `${s.seed},${s.g},${s.r}`;
    if (topk.key !== topkKey) topk = { key: topkKey, points: Array.from({ length: L }, (_, n) => compute(s.seed, 'topk', n + 1, 0, 0, 0)) };
    if (!win.points.length) win = { key: winKey, g: s.g, r: s.r, points: windowCurve(ctx.qk, s.seed, s.g, s.r) };
    else if (win.key !== winKey && pending !== winKey) void fetchWindow(winKey, s.seed, s.g, s.r);
    // A top-k pattern is one of its curve's points (the same call on the same inputs, so the
    // same result): no forward of its own; a window pattern is one call.
    cur = (s.pattern === 'topk' ? topk.points[s.k - 1] : undefined) ?? compute(s.seed, s.pattern, s.k, s.w, s.g, s.r);
    const c = cur;
    // Only a new seed changes the full map (its 256 cells are not even compared otherwise).
    if (fullDrawn !== c.full) fullHm.update(weightsSpec(ctx, c.full.weights, t.fullTitle));
    fullDrawn = c.full;
    const masked = (i: number, j: number) => (s.pattern === 'topk' ? c.sparse.weights.data[i * L + j] === 0 : c.sparse.maskedScores.data[i * L + j] === -Infinity);
    sparseHm.update(weightsSpec(ctx, c.sparse.weights, `${t.sparseTitle}: ${s.pattern === 'topk' ? `${t.topk}, k = ${s.k}` : `${t.window}, w = ${s.w}, g = ${s.g}, r = ${s.r}`}`, masked));
    // While a window curve is on its way the chart waits for it (one update, not two).
    if (!pending) drawChart();
    const pct = (x: number) => `${fixed(100 * x, 0)}%`;
    summary.textContent = fill(t.summary, { kept: pct(c.kept), scored: pct(c.scored), err: fixed(c.err, 3), dw: fixed(c.dw, 3) });
    summary.dataset.kept = String(c.kept);
    summary.dataset.scored = String(c.scored);
    summary.dataset.err = String(c.err);
  };

  const fig = new FigureFrame(ctx.cat, {
    id: 'figure-c8-sparse',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['pattern', 'k', 'w', 'g', 'r']),
    charts: () => [{ title: t.fullTitle, parts: fullHm.parts() }, { title: t.sparseTitle, parts: sparseHm.parts() }, { parts: chart.parts() }],
    data: () => {
      const tbl = matricesTable([['full', cur!.full.weights], ['sparse', cur!.sparse.weights]]);
      return { ...tbl, json: { settings: store.get(), keptFraction: cur!.kept, scoredFraction: cur!.scored, relativeOutputError: cur!.err, weights: tbl } };
    },
  });
  const kBox = slider(store, 'k', { id: 'c8-k', label: t.k, min: 1, max: L, step: 1 });
  const wBox = slider(store, 'w', { id: 'c8-w', label: t.w, min: 0, max: L - 1, step: 1 });
  const gBox = slider(store, 'g', { id: 'c8-g', label: t.g, min: 0, max: 4, step: 1 });
  const rBox = slider(store, 'r', { id: 'c8-r', label: t.r, min: 0, max: 4, step: 1, hint: t.rHint });
  // k acts only on top-k; w, g and r only on the window pattern: the others are disabled,
  // not silently ignored.
  const syncEnabled = () => {
    const topk = store.get().pattern === 'topk';
    for (const [box, on] of [[kBox, topk], [wBox, !topk], [gBox, !topk], [rBox, !topk]] as const) {
      box.querySelector('input')!.disabled = !on;
      box.classList.toggle('inactive', !on);
    }
  };
  fig.body.append(
    controlGroup(ctx.cat.common.controls,
      radios(store, 'pattern', { id: 'c8-pattern', label: t.pattern, options: [['topk', t.topk], ['window', t.window]] }),
      kBox, wBox, gBox, rBox),
    summary,
    h('div', { className: 'panels c8-grid' }, panel(t.fullTitle, fullHm.el), panel(t.sparseTitle, sparseHm.el), panel(t.errTitle, chart.el)));
  syncEnabled();
  store.on((_, ch) => ch.has('pattern') && syncEnabled());
  store.on((_, ch) => ['pattern', 'k', 'w', 'g', 'r', 'seed'].some((k) => ch.has(k as keyof Ch8Spec)) && draw());
  ctx.whenVisible(fig.el, draw);
  return fig.el;
}
