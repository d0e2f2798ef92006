/**
 * Chapter 6's figures, computed by the core's forward():
 * - Figure 6.1: softmax, hard, Gumbel-softmax (seeded, hard/straight-through toggle),
 *   sparsemax and top-k softmax on the same 3 x 6 logits: grouped bars for one row, a table
 *   of entropy / effective support / non-zero count, and one heatmap per normalizer.
 * - Figure 6.2: frequencies of the winning key over n hard Gumbel samples (seeds 1..n)
 *   against softmax(z) (the Gumbel-max trick).
 */
import type { ForwardResult, NormalizerName } from '@qkscope/wasm';
import { fill } from '../../i18n';
import { Heatmap } from '../../charts/heatmap';
import { BarChart } from '../../charts/bars';
import { matricesTable } from '../../charts/export';
import { fixed, trimmed } from '../../model/format';
import { row } from '../../model/matrix';
import type { ChapterContext } from '../types';
import type { Store } from '../shared/store';
import { h, testId } from '../shared/dom';
import { labelNodes } from '../../charts/label';
import { setText } from '../../charts/attr';
import { FigureFrame } from '../shared/figure';
import { checkbox, integer, radios, slider, controlGroup } from '../shared/controls';
import { tex } from '../shared/rich';
import { C6_SCORES, gumbelFrequencies, runNorm, softmaxRow, support } from './model';
import type { Ch6Spec } from './model';
import type { Ch6Text } from './en';

type Ctx = ChapterContext<Ch6Text>;
const L = C6_SCORES[0]!.length;

const rowOptions = (ctx: Ctx) => C6_SCORES.map((_, i) => [String(i + 1), fill(ctx.t.fig.rowOption, { i: i + 1 })] as const);

/** Figure 6.1: five normalizers on the same logits. */
export function normalizersFigure(ctx: Ctx, store: Store<Ch6Spec>): HTMLElement {
  const t = ctx.t.fig;
  const c = ctx.cat.common;
  const names = ctx.qk.normalizers.map((n) => n.name);
  const label = (n: string) => t.names[n] ?? ctx.qk.normalizers.find((x) => x.name === n)?.label ?? n;
  const resample = testId(h('button', { type: 'button', className: 'button c6-resample', textContent: t.resample }), 'c6-resample');
  resample.addEventListener('click', () => store.set({ seed: (store.get().seed % 999_999) + 1 }));
  const seedBox = h('div', { className: 'c6-seed' }, integer(store, 'seed', { id: 'c6-seed', label: t.seed, min: 0, max: 999_999 }), resample);
  const controls = controlGroup(ctx.cat.common.controls,
    slider(store, 'tau', { id: 'c6-tau', label: t.tau, min: 0.05, max: 20, step: 0.02, scale: 'log', format: (v) => trimmed(Number(v.toPrecision(3)), 3) }),
    slider(store, 'k', { id: 'c6-k', label: t.k, min: 1, max: L, step: 1 }),
    seedBox,
    checkbox(store, 'hard', { id: 'c6-hard', label: t.hard }),
    radios(store, 'row', { id: 'c6-row', label: t.row, options: rowOptions(ctx) }),
  );
  const bars = new BarChart('c6-bars');
  const logits = testId(h('p', { className: 'hint' }), 'c6-logits');
  const head = h('tr', {}, ...[t.colName, t.colH, t.colSupport, t.colNonzero, t.colMax].map((x) => h('th', { scope: 'col' }, ...labelNodes(x))));
  const statRows = names.map((n) => testId(h('tr', {}, h('th', { scope: 'row', textContent: label(n) }), h('td'), h('td'), h('td'), h('td')), `c6-stat-${n}`));
  const tbody = h('tbody', {}, ...statRows);
  const setData = (el: HTMLElement, key: string, value: string) => {
    if (el.dataset[key] !== value) el.dataset[key] = value;
  };
  const table = testId(h('table', { className: 'row-stats c6-table' }, h('thead', {}, head), tbody), 'c6-table');
  const panels = names.map((n) => {
    const hm = new Heatmap(`c6-hm-${n}`);
    const formula = h('div', { className: 'c6-formula' });
    const info = ctx.qk.normalizers.find((x) => x.name === n)!;
    formula.innerHTML = tex(info.tex);
    return { name: n, hm, el: testId(h('div', { className: 'panel' }, h('h3', { textContent: label(n) }), formula, hm.el), `c6-panel-${n}`) };
  });
  for (const p of panels) p.hm.onCellFocus = (cell) => panels.forEach((o) => o !== p && o.hm.highlight(cell));
  let results: Map<NormalizerName, ForwardResult> = new Map();

  const draw = () => {
    const s = store.get();
    const i = Number(s.row) - 1;
    results = new Map(names.map((n) => [n, runNorm(ctx.qk, n, s)]));
    bars.update({
      label: fill(t.bars, { i: i + 1 }), height: 260,
      categories: C6_SCORES[0]!.map((_, j) => String(j + 1)), x: { label: t.key }, y: { label: t.weight, domain: [0, 1] },
      series: names.map((n, k) => ({ id: n, label: label(n), values: row(results.get(n)!.weights, i), color: k })),
    });
    logits.textContent = fill(t.logits, { i: i + 1, z: `[${C6_SCORES[i]!.map((x) => trimmed(x, 2)).join(', ')}]` });
    // The rows stay; their cells' Text data change (a rebuilt body was a child-list mutation,
    // which makes the page measure the table's scroll box: a forced layout on every input).
    // The numbers have fixed widths (entropy <= log 6, support <= 6), so the table's width,
    // and whether it scrolls, does not change with them.
    names.forEach((n, k) => {
      const r = results.get(n)!;
      const w = row(r.weights, i);
      const H = r.entropy[i]!;
      const tr = statRows[k]!;
      [fixed(H, 3), fixed(Math.exp(H), 2), `${support(w)} / ${L}`, fixed(r.maxWeight[i]!, 3)].forEach((text, c) => setText(tr.cells[c + 1]!, text));
      setData(tr, 'h', String(H));
      setData(tr, 'nonzero', String(support(w)));
      setData(tr, 'max', String(r.maxWeight[i]!));
      setData(tr, 'weights', w.join(','));
    });
    for (const p of panels) {
      p.hm.update({
        values: results.get(p.name)!.weights, palette: 'unit', decimals: 2, rowAxis: c.axisQuery, colAxis: c.axisKey,
        label: fill(t.panel, { name: label(p.name) }),
        cellLabel: (a, b, v) => `${label(p.name)}: ${fill(c.cellLabel, { row: c.axisQuery, i: a, col: c.axisKey, j: b, value: v })}`,
        maskedText: c.maskedCell, legendTitle: c.legendWeight,
      });
    }
  };
  const frame = new FigureFrame(ctx.cat, {
    id: 'figure-c6-norms',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['tau', 'k', 'seed', 'hard', 'row']),
    charts: () => [{ parts: bars.parts() }, ...panels.map((p) => ({ title: label(p.name), parts: p.hm.parts() }))],
    data: () => {
      const s = store.get();
      const m = matricesTable(names.map((n) => [n, results.get(n)!.weights]), 'query', 'key');
      return { ...m, json: { logits: C6_SCORES, tau: s.tau, k: s.k, seed: s.seed, hard: s.hard, weights: m.json, entropy: Object.fromEntries(names.map((n) => [n, Array.from(results.get(n)!.entropy)])) } };
    },
  });
  frame.body.append(controls,
    h('div', { className: 'c6-top' }, h('div', { className: 'c6-bars' }, bars.el, logits), h('div', { className: 'table-scroll' }, table)),
    h('div', { className: 'panels c6-grid' }, ...panels.map((p) => p.el)));
  store.on((_, ch) => ['tau', 'k', 'seed', 'hard', 'row'].some((k) => ch.has(k as never)) && draw());
  draw();
  return frame.el;
}

/** Figure 6.2: hard Gumbel samples vs softmax(z). Runs when visible (n forward calls). */
export function gumbelFigure(ctx: Ctx, store: Store<Ch6Spec>): HTMLElement {
  const t = ctx.t.fig2;
  const controls = controlGroup(ctx.cat.common.controls,
    radios(store, 'samples', { id: 'c6-samples', label: t.samples, options: [['100', '100'], ['1000', '1000'], ['5000', '5000']] }),
    radios(store, 'row', { id: 'c6-row2', label: t.row, options: rowOptions(ctx) }),
  );
  const bars = new BarChart('c6-gumbel');
  const gap = testId(h('p', { className: 'c6-gap' }), 'c6-gumbel-gap');
  gap.setAttribute('aria-live', 'polite');
  let data = { freq: [] as number[], prob: [] as number[] };
  let visible = false;

  const draw = () => {
    if (!visible) return;
    const s = store.get();
    const i = Number(s.row) - 1;
    const n = Number(s.samples);
    data = { freq: gumbelFrequencies(ctx.qk, i, n, s.tau), prob: softmaxRow(ctx.qk, i) };
    bars.update({
      label: fill(t.chart, { i: i + 1 }), height: 260,
      categories: data.prob.map((_, j) => String(j + 1)), x: { label: t.key }, y: { label: t.share, domain: [0, 1] },
      series: [{ id: 'freq', label: t.freq, values: data.freq, color: 2 }, { id: 'prob', label: t.prob, values: data.prob, color: 0 }],
    });
    const g = Math.max(...data.freq.map((f, j) => Math.abs(f - data.prob[j]!)));
    gap.dataset.gap = String(g);
    gap.dataset.freq = data.freq.join(',');
    gap.textContent = fill(t.gap, { gap: fixed(g, 3), n });
  };
  const frame = new FigureFrame(ctx.cat, {
    id: 'figure-c6-gumbel',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['samples', 'row']),
    charts: () => [{ parts: bars.parts() }],
    data: () => ({
      columns: ['key', 'sample_frequency', 'softmax_probability'],
      rows: data.prob.map((p, j) => [j + 1, data.freq[j] ?? NaN, p]),
      json: { samples: Number(store.get().samples), row: Number(store.get().row), frequency: data.freq, softmax: data.prob },
    }),
  });
  frame.body.append(controls, h('div', { className: 'c6-gumbel' }, bars.el), gap);
  store.on((_, ch) => ['samples', 'row', 'tau'].some((k) => ch.has(k as never)) && draw());
  ctx.whenVisible(frame.el, () => {
    visible = true;
    draw();
  });
  return frame.el;
}
