/**
 * Chapter 5's numerical figures:
 * - Figure 5.5: logit soft-capping s <- c tanh(s/c) (Gemma 2 Team 2024, §2), the curve read
 *   back from the core's scores, and its effect on the weights of a row of large logits.
 * - Figure 5.6: a fully masked row under masked_fill in float16 / bfloat16 / float32 with the
 *   fill values -1e4, -1e9, -inf and finfo.min (core's precisionSoftmax), next to qkscope's
 *   policy (fp32 softmax, -inf mask, empty row = 0).
 */
import type { Matrix, PrecisionResult } from '@qkscope/wasm';
import { fill } from '../../i18n';
import { Heatmap } from '../../charts/heatmap';
import { LineChart } from '../../charts/line';
import { BarChart } from '../../charts/bars';
import { matricesTable, seriesTable } from '../../charts/export';
import { trimmed } from '../../model/format';
import { row } from '../../model/matrix';
import type { Store } from '../shared/store';
import { h, testId } from '../shared/dom';
import { FigureFrame } from '../shared/figure';
import { radios, slider } from '../shared/controls';
import { DTYPES, FILLS, PREC_MASK, PREC_SCORES, fillValue, shortText } from './model';
import { type Ctx, hmSpec } from './figures-masks';
import type { Ch5Spec } from './model';

const RAW = Array.from({ length: 61 }, (_, k) => -60 + 2 * k);
const BIG = [40, 30, 20, 5, 0];

/** Logits of one query against keys holding the given raw scores ('dot', q = [1]), with a cap. */
function capped(ctx: Ctx, raw: number[], c: number | undefined) {
  return ctx.qk.forward({ query: [[1]], key: raw.map((x) => [x]), value: raw.map(() => [0]), score: 'dot', ...(c ? { softcap: c } : {}) });
}

/** Figure 5.5: the cap curve and a row of large logits with and without it. */
export function softcapFigure(ctx: Ctx, store: Store<Ch5Spec>): HTMLElement {
  const t = ctx.t.figCap;
  const controls = h('div', { className: 'controls' },
    slider(store, 'cap', { id: 'c5-cap', label: t.cap, min: 1, max: 100, step: 0.02, scale: 'log', format: (v) => trimmed(v, 2) }));
  const line = new LineChart('c5-cap-curve');
  const bars = new BarChart('c5-cap-bars');
  let series: { id: string; points: { x: number; y: number }[] }[] = [];
  let weights: { none: number[]; cap: number[] } = { none: [], cap: [] };

  const draw = () => {
    const c = store.get().cap;
    const curve = row(capped(ctx, RAW, c).scores, 0);
    series = [
      { id: 'capped', points: RAW.map((x, k) => ({ x, y: curve[k]! })) },
      { id: 'identity', points: [{ x: -60, y: -60 }, { x: 60, y: 60 }] },
    ];
    line.update({
      label: t.curve, height: 260,
      x: { label: t.raw, domain: [-60, 60] }, y: { label: t.capped, domain: [-60, 60] },
      series: [
        { id: 'capped', label: t.capSeries, points: series[0]!.points, markers: false },
        { id: 'identity', label: t.identity, points: series[1]!.points, dashed: true, markers: false, color: 6 },
      ],
      marker: { x: c, label: `c = ${trimmed(c, 1)}` },
    });
    weights = { none: row(capped(ctx, BIG, undefined).weights, 0), cap: row(capped(ctx, BIG, c).weights, 0) };
    bars.update({
      label: fill(t.weights, { z: `[${BIG.join(', ')}]` }), height: 260,
      categories: BIG.map((_, j) => String(j + 1)), x: { label: t.key }, y: { label: t.weight, domain: [0, 1] },
      series: [{ id: 'none', label: t.without, values: weights.none, color: 3 }, { id: 'cap', label: fill(t.with, { c: trimmed(c, 1) }), values: weights.cap }],
    });
    bars.el.dataset.capped = weights.cap.join(',');
  };
  const frame = new FigureFrame(ctx.cat, {
    id: 'figure-c5-softcap',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['cap']),
    charts: () => [{ title: t.curve, parts: line.parts() }, { parts: bars.parts() }],
    data: () => {
      const d = seriesTable(series, 'raw', 'capped');
      return { ...d, json: { cap: store.get().cap, curve: d.json, logits: BIG, weights } };
    },
  });
  frame.body.append(controls, h('div', { className: 'panels c5-row' },
    h('div', { className: 'panel' }, h('h3', { textContent: t.curve }), line.el),
    h('div', { className: 'panel' }, h('h3', { textContent: fill(t.weights, { z: `[${BIG.join(', ')}]` }) }), bars.el)));
  store.on((_, ch) => ch.has('cap') && draw());
  draw();
  return frame.el;
}

/** Figure 5.6: fully masked row, fill values and dtypes. */
export function precisionFigure(ctx: Ctx, store: Store<Ch5Spec>): HTMLElement {
  const t = ctx.t.figPrec;
  const fillLabels: Record<(typeof FILLS)[number], string> = { '1e4': t.fill1e4, '1e9': t.fill1e9, inf: t.fillInf, min: t.fillMin };
  const controls = h('div', { className: 'controls' },
    radios(store, 'dtype', { id: 'c5-dtype', label: t.dtype, options: DTYPES.map((d) => [d, d] as const) }),
    radios(store, 'fill', { id: 'c5-fill', label: t.fill, options: FILLS.map((f) => [f, fillLabels[f]] as const) }));
  const scoresM: Matrix = { rows: 3, cols: 4, data: Float32Array.from(PREC_SCORES.flat()) };
  const isMasked = (i: number, j: number) => PREC_MASK[i]![j] === 0;
  const hmS = new Heatmap('c5-prec-scores');
  const hmN = new Heatmap('c5-prec-naive');
  const hmC = new Heatmap('c5-prec-correct');
  const all = [hmS, hmN, hmC];
  for (const x of all) x.onCellFocus = (cell) => all.forEach((o) => o !== x && o.highlight(cell));
  const titles = [h('h3'), h('h3'), h('h3')];
  const tbody = h('tbody');
  const table = h('table', { className: 'row-stats c5-prec-table' }, tbody);
  const summary = testId(h('span', { className: 'c5-core-summary' }), 'c5-prec-summary');
  let naive: PrecisionResult | null = null;
  let correct: PrecisionResult | null = null;

  const readRow = (id: string, label: string, value: string, data: string) => {
    const td = testId(h('td', { textContent: value }), id);
    td.dataset.value = data;
    return h('tr', {}, h('th', { scope: 'row', textContent: label }), td);
  };
  const draw = () => {
    const s = store.get();
    const f = fillValue(s.fill, s.dtype);
    naive = ctx.qk.precisionSoftmax({ scores: PREC_SCORES, mask: PREC_MASK, dtype: s.dtype, method: 'masked_fill', fill: f });
    correct = ctx.qk.precisionSoftmax({ scores: PREC_SCORES, mask: PREC_MASK, dtype: s.dtype, method: 'correct' });
    titles[0]!.textContent = t.scores;
    titles[1]!.textContent = fill(t.naive, { dtype: s.dtype });
    titles[2]!.textContent = t.correct;
    hmS.update(hmSpec(ctx, scoresM, titles[0]!.textContent, { signed: true, masked: isMasked }));
    hmN.update(hmSpec(ctx, naive.weights, titles[1]!.textContent));
    hmC.update(hmSpec(ctx, correct.weights, titles[2]!.textContent, { masked: isMasked }));
    const r2 = row(naive.weights, 1);
    const state = r2.some(Number.isNaN) ? 'nan' : r2.every((x) => x === 0) ? 'zero' : 'uniform';
    tbody.replaceChildren(
      readRow('c5-prec-stored', t.stored, shortText(naive.constantStored), String(naive.constantStored)),
      readRow('c5-prec-nan', t.nan, String(naive.nanCount), String(naive.nanCount)),
      readRow('c5-prec-row2', t.row2, state === 'nan' ? t.row2Nan : state === 'zero' ? t.row2Zero : t.row2Uniform, state),
      readRow('c5-prec-raises', t.raises, naive.pytorchRaises ? t.raisesYes : t.raisesNo, String(naive.pytorchRaises)),
    );
    // The core's one-line summary is English and counts rows from 0; this line says the same
    // from its structured fields, in the page's language, with rows counted from 1 like the table.
    const nanRows = Array.from({ length: naive.weights.rows }, (_, i) => i).filter((i) => row(naive!.weights, i).some(Number.isNaN)).map((i) => i + 1);
    summary.textContent = fill(t.summaryLine, {
      dtype: s.dtype, fill: fillLabels[s.fill], stored: shortText(naive.constantStored), raises: naive.pytorchRaises ? t.summaryRaises : '',
      inf: naive.infCount, nan: nanRows.length ? fill(t.summaryNan, { rows: nanRows.join(', '), n: naive.nanCount }) : t.summaryNoNan,
    });
    summary.dataset.core = naive.summary;
  };
  const frame = new FigureFrame(ctx.cat, {
    id: 'figure-c5-precision',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['dtype', 'fill']),
    charts: () => all.map((x, k) => ({ title: titles[k]!.textContent ?? '', parts: x.parts() })),
    data: () => {
      const s = store.get();
      const m = naive && correct ? matricesTable([['scores', scoresM], ['masked_fill', naive.weights], ['qkscope', correct.weights]], 'query', 'key') : { columns: [], rows: [] };
      return { ...m, json: { dtype: s.dtype, fill: fillValue(s.fill, s.dtype), stored: naive?.constantStored, nanCount: naive?.nanCount, pytorchRaises: naive?.pytorchRaises, summary: naive?.summary, mask: PREC_MASK, matrices: m.json } };
    },
  });
  frame.body.append(controls,
    h('div', { className: 'panels c5-row c5-prec' }, ...all.map((x, k) => h('div', { className: 'panel' }, titles[k]!, x.el))),
    h('div', { className: 'table-scroll' }, table),
    h('p', { className: 'hint c5-summary-line' }, t.summary, summary));
  store.on((_, ch) => (ch.has('dtype') || ch.has('fill')) && draw());
  draw();
  return frame.el;
}
