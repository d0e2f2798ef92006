/**
 * Chapter 7's figures:
 * - 7.1: forward() time against L for every scoring function (Run button, median of warm
 *   runs, timed in the page's Web Worker: web/src/worker/) and a memory estimate from shapes.
 * - 7.2 (paths.ts): naive vs tiled vs broadcast, time and returned memory up to L = 4096.
 * - 7.3: the broadcast additive attention (JS, materialises (L, L, d_h)) against qkscope's
 *   row-by-row additive (core) and scaled dot; same scores checked, slowdown ratios.
 * - 7.4: linear concat's weights do not depend on the query (a_i + b_j cancels in softmax).
 */
import type { ForwardResult, Matrix, ScoreName } from '@qkscope/wasm';
import { fill } from '../../i18n';
import { runTimed } from '../shared/timed-run';
import { qkWorker } from '../../worker/client';
import { LineChart, type LineSeries } from '../../charts/line';
import { BarChart } from '../../charts/bars';
import { Heatmap } from '../../charts/heatmap';
import { type FigureData, matricesTable } from '../../charts/export';
import { fixed, sig } from '../../model/format';
import type { ChapterContext } from '../types';
import type { Store } from '../shared/store';
import { h, testId } from '../shared/dom';
import { setLabel } from '../../charts/label';
import { FigureFrame } from '../shared/figure';
import { integer, radios, controlGroup } from '../shared/controls';
import { type Timing, broadcastAdditive, bytesText, inputsByLength, maxAbsDiff, memoryBytes, powersOfTwo, randn } from './model';
import type { Ch7Spec } from './model';
import type { Ch7Text } from './en';

type Ctx = ChapterContext<Ch7Text>;
const REPS = 3;
/** Largest L of the quick run each timing figure makes on its own when it comes into view. */
const PREVIEW_L = 128;
const PREVIEW_ADD_L = 64;
const MB = 1024 * 1024;


function scoreLabel(ctx: Ctx, name: string): string {
  return ctx.cat.scoreLabels[name] ?? ctx.qk.scoreFunctions.find((f) => f.name === name)?.label ?? name;
}

/** Figure 7.1: time of forward() and memory against L. */
export function timeFigure(ctx: Ctx, store: Store<Ch7Spec>): HTMLElement {
  const t = ctx.t.fig1;
  const names = ctx.qk.scoreFunctions.map((f) => f.name);
  const runButton = testId(h('button', { type: 'button', className: 'button primary', textContent: t.run }), 'c7-run');
  const status = testId(h('p', { className: 'hint run-status', textContent: t.notRun }), 'c7-status');
  status.setAttribute('aria-live', 'polite');
  const summary = testId(h('p', { className: 'figure-summary' }), 'c7-summary');
  const memNote = h('p', { className: 'hint' });
  const timeChart = new LineChart('c7-time');
  const memChart = new LineChart('c7-memory');
  const timeBox = h('div', { className: 'panel', hidden: true }, h('h3', { textContent: t.timeTitle }), timeChart.el);
  let results: Timing[] = [];
  let generation = 0;

  const drawMemory = () => {
    const d = Number(store.get().d);
    const Ls = powersOfTwo(32, 8192);
    const m = (pick: (x: ReturnType<typeof memoryBytes>) => number) => Ls.map((L) => ({ x: L, y: pick(memoryBytes(L, d, d)) / MB }));
    memChart.update({
      label: t.memLabel,
      x: { label: t.axisL, scale: 'log', ticks: [32, 128, 512, 2048, 8192] },
      y: { label: t.axisMb, scale: 'log' },
      series: [
        { id: 'broadcast', label: t.memBroadcast, color: 4, points: m((x) => x.broadcast) },
        { id: 'forward', label: t.memForward, color: 0, points: m((x) => x.forwardCopies) },
        { id: 'scores', label: t.memScores, color: 1, points: m((x) => x.scoresWeights) },
        { id: 'tiled', label: t.memTiled, color: 2, dashed: true, points: m((x) => x.tiled) },
      ],
      height: 300,
    });
    const at = memoryBytes(4096, d, d);
    memNote.textContent = fill(t.memNote, { s: bytesText(at.scoresWeights), t: bytesText(at.tiled) });
  };

  const drawTime = () => {
    if (results.length === 0) {
      timeBox.hidden = true;
      summary.textContent = '';
      return;
    }
    timeBox.hidden = false;
    const series: LineSeries[] = names.map((n, k) => ({
      id: n, label: scoreLabel(ctx, n), color: k, dashed: n === 'linear_concat',
      points: results.filter((r) => r.series === n).map((r) => ({ x: r.x, y: Math.max(r.ms, 1e-3) })),
    })).filter((s) => s.points.length > 0);
    const Ls = powersOfTwo(32, Math.max(...results.map((r) => r.x)));
    timeChart.update({ label: t.timeLabel, x: { label: t.axisL, scale: 'log', ticks: Ls }, y: { label: t.axisMs, scale: 'log' }, series, height: 320,
      pointLabel: (s, p) => `${s.label}: L = ${p.x}, ${sig(p.y)} ms` });
    const lastL = Math.max(...results.filter((r) => r.series === 'scaled_dot').map((r) => r.x));
    const dot = results.find((r) => r.series === 'scaled_dot' && r.x === lastL);
    const add = results.find((r) => r.series === 'additive' && r.x === lastL);
    if (dot && add) {
      summary.textContent = fill(t.summary, { L: lastL, dot: sig(dot.ms), add: sig(add.ms), ratio: sig(add.ms / Math.max(dot.ms, 1e-6)) });
      summary.dataset.ratio = String(add.ms / Math.max(dot.ms, 1e-6));
    } else summary.textContent = '';
  };

  /** Measures up to `upTo` (default: the chosen largest L); the figure runs a quick preview on its own. */
  const run = async (upTo?: number) => {
    const my = ++generation;
    const s = store.get();
    const d = Number(s.d);
    const Ls = powersOfTwo(32, upTo ?? Number(s.maxL));
    const inputs = inputsByLength(1, d);
    results = [];
    drawTime();
    // Timed in the page's worker when there is one (the page stays responsive at large L);
    // `run` is the same call on this thread, the fallback. One channel: a newer run's first
    // task replaces whatever of the old run still waits.
    const worker = qkWorker();
    const tasks = Ls.flatMap((L) => names.map((n) => {
      const options = () => {
        const { Q, K, V } = inputs(L);
        return { query: Q, key: K, value: V, score: n as ScoreName, hidden: d };
      };
      return {
        series: n, x: L, run: () => void ctx.qk.forward(options()),
        ...(worker ? { remote: (reps: number, slowMs: number) => worker.time('forward', [options()], reps, slowMs, 'c7-time') } : {}),
      };
    }));
    await runTimed({
      tasks, reps: REPS, status, button: runButton, text: upTo ? { running: t.running, done: fill(t.preview, { L: upTo }) } : t,
      stale: () => my !== generation,
      onResult: (res) => {
        results.push(res);
        drawTime();
      },
    });
  };
  runButton.addEventListener('click', () => void run());

  const fig = new FigureFrame(ctx.cat, {
    id: 'figure-c7-time',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['maxL', 'd']),
    charts: () => [...(results.length ? [{ title: t.timeTitle, parts: timeChart.parts() }] : []), { title: t.memTitle, parts: memChart.parts() }],
    data: (): FigureData => {
      const d = Number(store.get().d);
      return {
        columns: ['kind', 'series', 'L', 'value', 'unit'],
        rows: [
          ...results.map((r) => ['time', r.series, r.x, r.ms, 'ms'] as (string | number)[]),
          ...powersOfTwo(32, 8192).flatMap((L) => Object.entries(memoryBytes(L, d, d)).map(([k, v]) => ['memory_estimate', k, L, v, 'bytes'])),
        ],
        json: { d, repsPerPoint: REPS, userAgent: navigator.userAgent, timings: results, memoryEstimate: powersOfTwo(32, 8192).map((L) => ({ L, ...memoryBytes(L, d, d) })) },
      };
    },
  });
  const controls = controlGroup(ctx.cat.common.controls,
    radios(store, 'maxL', { id: 'c7-maxl', label: t.maxL, options: ['128', '256', '512', '1024'].map((x) => [x, x] as const), hint: t.maxLHint }),
    radios(store, 'd', { id: 'c7-d', label: t.d, options: ['16', '32', '64'].map((x) => [x, x] as const) }),
    h('div', { className: 'control run-row' }, runButton, status));
  fig.body.append(controls, summary,
    h('div', { className: 'panels' }, timeBox, h('div', { className: 'panel' }, h('h3', { textContent: t.memTitle }), memChart.el, memNote)));
  store.on((_, changed) => {
    if (changed.has('d')) drawMemory();
    // New settings: the old timings no longer apply; a quick run replaces them (never empty).
    if (changed.has('maxL') || changed.has('d')) void run(PREVIEW_L);
  });
  drawMemory();
  ctx.whenVisible(fig.el, () => generation === 0 && void run(PREVIEW_L));
  return fig.el;
}

/** Figure 7.3: broadcast additive (JS) vs row-by-row additive (core) vs scaled dot (core). */
export function additiveFigure(ctx: Ctx, store: Store<Ch7Spec>): HTMLElement {
  const t = ctx.t.fig2;
  const t1 = ctx.t.fig1;
  const D = 32;
  const runButton = testId(h('button', { type: 'button', className: 'button primary', textContent: t.run }), 'c7-add-run');
  const status = testId(h('p', { className: 'hint run-status', textContent: t1.notRun }), 'c7-add-status');
  status.setAttribute('aria-live', 'polite');
  const same = testId(h('p', { className: 'hint' }), 'c7-same');
  const summary = testId(h('p', { className: 'figure-summary' }), 'c7-add-summary');
  const timeChart = new LineChart('c7-add-time');
  const ratioChart = new BarChart('c7-add-ratio');
  const charts = h('div', { className: 'panels', hidden: true },
    h('div', { className: 'panel' }, h('h3', { textContent: t.timeTitle }), timeChart.el),
    h('div', { className: 'panel' }, h('h3', { textContent: t.ratioTitle }), ratioChart.el));
  let results: Timing[] = [];
  let check: { L: number; diff: number; bytes: number } | null = null;
  let generation = 0;
  const labels: Record<string, string> = { broadcast: t.broadcast, fused: t.fused, dot: t.dot };

  const draw = () => {
    if (results.length === 0) {
      charts.hidden = true;
      summary.textContent = '';
      same.textContent = '';
      return;
    }
    charts.hidden = false;
    const Ls = powersOfTwo(16, Math.max(...results.map((r) => r.x)));
    const series = (['broadcast', 'fused', 'dot'] as const).map((id, k) => ({
      id, label: labels[id]!, color: [4, 5, 1][k]!, dashed: id === 'dot',
      points: results.filter((r) => r.series === id).map((r) => ({ x: r.x, y: Math.max(r.ms, 1e-3) })),
    }));
    timeChart.update({ label: t.timeLabel, x: { label: t1.axisL, scale: 'log', ticks: Ls }, y: { label: t1.axisMs, scale: 'log' }, series, height: 300,
      pointLabel: (s, p) => `${s.label}: L = ${p.x}, ${sig(p.y)} ms` });
    const ratio = (id: string, L: number) => {
      const a = results.find((r) => r.series === id && r.x === L);
      const d = results.find((r) => r.series === 'dot' && r.x === L);
      return a && d ? a.ms / Math.max(d.ms, 1e-6) : null;
    };
    const done = Ls.filter((L) => results.some((r) => r.series === 'dot' && r.x === L));
    ratioChart.update({
      label: t.ratioLabel, categories: done.map(String), x: { label: t1.axisL }, y: { label: t.axisRatio, domain: [0, null] },
      series: [{ id: 'broadcast', label: t.broadcast, color: 4, values: done.map((L) => ratio('broadcast', L)) }, { id: 'fused', label: t.fused, color: 5, values: done.map((L) => ratio('fused', L)) }],
      height: 300,
    });
    const last = done[done.length - 1];
    const b = last === undefined ? null : ratio('broadcast', last);
    const f = last === undefined ? null : ratio('fused', last);
    summary.textContent = last !== undefined && b !== null && f !== null ? fill(t.summary, { L: last, b: sig(b), f: sig(f) }) : '';
    setLabel(same, check ? fill(t.same, { diff: check.diff.toExponential(1).replace('-', '\u2212'), L: check.L, bytes: bytesText(check.bytes) }) : '');
    if (check) same.dataset.diff = String(check.diff);
  };

  const run = async (upTo?: number) => {
    const my = ++generation;
    const s = store.get();
    const dh = Number(s.dh);
    const Ls = powersOfTwo(16, upTo ?? Number(s.addL));
    results = [];
    check = null;
    draw();
    const params = ctx.qk.initParams('additive', D, D, dh, 0);
    const p = { W_q: params.W_q!, W_k: params.W_k!, v: params.v!, b: params.b! };
    const inputs = inputsByLength(2, D);
    // All three in the page's worker when there is one (at L = 256, d_h = 64 one broadcast
    // call takes ~0.1 s and the row-by-row one ~0.05 s), else here.
    const worker = qkWorker();
    /** The three calls' arguments at length L (its inputs are drawn on first use). */
    const argsAt = (L: number) => {
      const { Q, K, V } = inputs(L);
      return {
        dot: { query: Q, key: K, value: V, score: 'scaled_dot' as const },
        fused: { query: Q, key: K, value: V, score: 'additive' as const, params },
        broadcast: [Q, K, V, p] as const,
      };
    };
    const remote = (method: 'forward' | 'broadcastAdditive', args: () => readonly unknown[]) =>
      worker ? { remote: (reps: number, slowMs: number) => worker.time(method, [...args()], reps, slowMs, 'c7-add') } : {};
    const tasks = Ls.flatMap((L) => [
      { series: 'dot', x: L, run: () => void ctx.qk.forward(argsAt(L).dot), ...remote('forward', () => [argsAt(L).dot]) },
      { series: 'fused', x: L, run: () => void ctx.qk.forward(argsAt(L).fused), ...remote('forward', () => [argsAt(L).fused]) },
      { series: 'broadcast', x: L, run: () => void broadcastAdditive(...argsAt(L).broadcast), ...remote('broadcastAdditive', () => argsAt(L).broadcast) },
    ]);
    /** Same scores? Checked outside the timed runs, at each L once its broadcast run is timed (in the worker when there is one). */
    const verify = async (L: number) => {
      const { fused, broadcast } = argsAt(L);
      let both: [ReturnType<typeof broadcastAdditive>, ForwardResult] | null = null;
      if (worker) {
        try {
          both = await Promise.all([worker.job<ReturnType<typeof broadcastAdditive>>('broadcastAdditive', [...broadcast]), worker.call<ForwardResult>('forward', [fused])]);
        } catch {
          both = null;
        }
      }
      both ??= [broadcastAdditive(...broadcast), ctx.qk.forward(fused)];
      // Checks may answer out of order; the figure states the longest length checked.
      if (my !== generation || (check && check.L > L)) return;
      check = { L, diff: maxAbsDiff(both[0].scores.data, both[1].rawScores.data), bytes: both[0].tensorBytes };
      draw();
    };
    const checks: Promise<void>[] = [];
    await runTimed({
      tasks, reps: REPS, status, button: runButton, text: upTo ? { running: t1.running, done: fill(t1.preview, { L: upTo }) } : t1,
      stale: () => my !== generation,
      onResult: (res) => {
        results.push(res);
        if (res.series === 'broadcast') checks.push(verify(res.x));
        draw();
      },
      settle: () => Promise.allSettled(checks),
    });
  };
  runButton.addEventListener('click', () => void run());

  const fig = new FigureFrame(ctx.cat, {
    id: 'figure-c7-additive',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['addL', 'dh']),
    charts: () => (results.length ? [{ title: t.timeTitle, parts: timeChart.parts() }, { title: t.ratioTitle, parts: ratioChart.parts() }] : []),
    data: () => ({
      columns: ['series', 'L', 'ms', 'runs'],
      rows: results.map((r) => [r.series, r.x, r.ms, r.runs]),
      json: { d: D, dh: Number(store.get().dh), timings: results, sameScores: check },
    }),
  });
  const controls = controlGroup(ctx.cat.common.controls,
    radios(store, 'addL', { id: 'c7-addl', label: t.maxL, options: ['64', '128', '256'].map((x) => [x, x] as const) }),
    radios(store, 'dh', { id: 'c7-dh', label: t.dh, options: ['16', '32', '64'].map((x) => [x, x] as const) }),
    h('div', { className: 'control run-row' }, runButton, status));
  fig.body.append(controls, summary, same, charts);
  store.on((_, changed) => {
    if (changed.has('addL') || changed.has('dh')) void run(PREVIEW_ADD_L);
  });
  ctx.whenVisible(fig.el, () => generation === 0 && void run(PREVIEW_ADD_L));
  return fig.el;
}

/** Figure 7.4: linear concat's weights are the same for every query. */
export function linearConcatFigure(ctx: Ctx, store: Store<Ch7Spec>): HTMLElement {
  const t = ctx.t.fig3;
  const c = ctx.cat.common;
  const LQ = 4;
  const LK = 6;
  const D = 4;
  const K = randn(7, 1, LK, D);
  const V = randn(7, 2, LK, D);
  const queries = (set: number): Matrix => {
    const m = randn(1000 + set, 0, LQ, D);
    for (let k = 0; k < m.data.length; k++) m.data[k] = Math.round(m.data[k]! * 150) / 100;
    return m;
  };
  const run = (score: ScoreName, Q: Matrix): ForwardResult => ctx.qk.forward({ query: Q, key: K, value: V, score, seed: 3 });
  const base = { lc: run('linear_concat', queries(0)), sd: run('scaled_dot', queries(0)) };
  const qHm = new Heatmap('c7-queries');
  const lcHm = new Heatmap('c7-lc-weights');
  const sdHm = new Heatmap('c7-sd-weights');
  const note = testId(h('p', { className: 'figure-summary' }), 'c7-lc-change');
  const next = testId(h('button', { type: 'button', className: 'button', textContent: t.newQueries }), 'c7-new-queries');
  next.addEventListener('click', () => store.set({ qset: (store.get().qset + 1) % 1000 }));
  let cur = base;
  let Q = queries(0);

  const cellLabel = (name: string, col: string) => (i: number, j: number, value: string) => `${name}: ${fill(c.cellLabel, { row: c.axisQuery, i, col, j, value })}`;
  const draw = () => {
    Q = queries(store.get().qset);
    cur = { lc: run('linear_concat', Q), sd: run('scaled_dot', Q) };
    qHm.update({ values: Q, palette: 'diverging', decimals: 2, rowAxis: c.axisQuery, colAxis: c.axisDim, label: t.queries, cellLabel: cellLabel(t.queries, c.axisDim), maskedText: c.maskedCell, legendTitle: c.legendValue });
    for (const [hm, r, name] of [[lcHm, cur.lc, t.lc], [sdHm, cur.sd, t.sd]] as const)
      hm.update({ values: r.weights, palette: 'unit', decimals: 3, rowAxis: c.axisQuery, colAxis: c.axisKey, label: name, cellLabel: cellLabel(name, c.axisKey), maskedText: c.maskedCell, legendTitle: c.legendWeight });
    const dl = maxAbsDiff(cur.lc.weights.data, base.lc.weights.data);
    const ds = maxAbsDiff(cur.sd.weights.data, base.sd.weights.data);
    const show = (x: number) => (x === 0 ? '0' : x < 1e-5 ? x.toExponential(1).replace('-', '\u2212') : fixed(x, 3));
    // On query set 0 itself there is nothing to compare yet: say what to do instead of "0; 0".
    note.textContent = store.get().qset === 0 ? t.changeStart : fill(t.change, { lc: show(dl), sd: show(ds) });
    note.dataset.lc = String(dl);
    note.dataset.sd = String(ds);
  };

  const fig = new FigureFrame(ctx.cat, {
    id: 'figure-c7-linear',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['qset']),
    charts: () => [{ title: t.queries, parts: qHm.parts() }, { title: t.lc, parts: lcHm.parts() }, { title: t.sd, parts: sdHm.parts() }],
    data: () => matricesTable([['queries', Q], ['weights_linear_concat', cur.lc.weights], ['weights_scaled_dot', cur.sd.weights]]),
  });
  const controls = controlGroup(ctx.cat.common.controls,
    h('div', { className: 'control run-row' }, integer(store, 'qset', { id: 'c7-qset', label: t.querySet, min: 0, max: 999 }), next));
  const panel = (title: string, el: HTMLElement) => h('div', { className: 'panel' }, h('h3', { textContent: title }), el);
  fig.body.append(controls, note, h('div', { className: 'panels c7-grid' }, panel(t.queries, qHm.el), panel(t.lc, lcHm.el), panel(t.sd, sdHm.el)));
  store.on((_, changed) => changed.has('qset') && draw());
  draw();
  return fig.el;
}
