/**
 * Chapter 10's two live demos:
 * - Figure 10.1: naive and stable softmax of [c, c-1, c-2] in fp32 or fp16 (the core's
 *   precisionSoftmax, methods 'no_max' and 'correct'): exp overflows past ln(max) of the type.
 * - Figure 10.2: q . k of q = k = (a, ..., a) against fp16's largest finite value, unscaled and
 *   scaled by 1/sqrt(d) (the core's forward; the core refuses to store a score past fp16's range).
 */
import { fill } from '../../i18n';
import { BarChart } from '../../charts/bars';
import { fixed, shortNumber } from '../../model/format';
import type { ChapterContext } from '../types';
import type { Store } from '../shared/store';
import { h, testId } from '../shared/dom';
import { FigureFrame } from '../shared/figure';
import { controlGroup, radios, slider } from '../shared/controls';
import { type Dtype, type makeSpec, maxShift, overflow } from './model';
import type { Ch10Text } from './en';

type Ctx = ChapterContext<Ch10Text>;
type Spec = ReturnType<typeof makeSpec>;

const FP16_MAX = 65504; // IEEE 754 binary16: (2 - 2^-10) 2^15 (docs/facts.md §10)

function cell(tag: 'td' | 'th', text: string, cls = ''): HTMLTableCellElement {
  const c = h(tag, { textContent: text, className: cls });
  if (tag === 'th') c.scope = 'row';
  return c;
}

export function maxShiftFigure(ctx: Ctx, store: Store<Spec>): HTMLElement {
  const t = ctx.t.maxshift;
  const chart = new BarChart('c10-maxshift-chart');
  const table = testId(h('table', { className: 'row-stats c10-stats' }), 'c10-maxshift-table');
  const status = testId(h('p', { className: 'figure-summary' }), 'c10-maxshift-status');
  status.setAttribute('aria-live', 'polite');
  let last = maxShift(ctx.qk, store.get().c, store.get().dtype);
  const fig = new FigureFrame(ctx.cat, {
    id: 'figure-c10-maxshift', title: t.title, caption: t.caption,
    onReset: () => store.reset(['c', 'dtype']),
    charts: () => [{ title: t.chartTitle, parts: chart.parts() }],
    data: () => ({
      columns: ['key', 'logit', 'naive', 'stable'],
      rows: last.logits.map((z, j) => [j + 1, z, last.naive.weights.data[j]!, last.stable.weights.data[j]!]),
    }),
  });
  const controls = controlGroup(ctx.cat.common.controls,
    slider(store, 'c', { id: 'c10-c', label: t.c, min: 0, max: 100, step: 0.1, format: (v) => fixed(v, 1) }),
    radios(store, 'dtype', { id: 'c10-dtype', label: t.dtype, options: [['float32', 'fp32'], ['float16', 'fp16']] }));
  const draw = () => {
    const { c, dtype } = store.get();
    last = maxShift(ctx.qk, c, dtype as Dtype);
    const naive = Array.from(last.naive.weights.data), stable = Array.from(last.stable.weights.data);
    const keys = last.logits.map((_, j) => `${t.key} ${j + 1}`);
    chart.update({
      label: t.chartTitle, categories: keys, x: { label: t.key }, y: { label: t.weight, domain: [0, 1] },
      series: [{ id: 'naive', label: t.naive, values: naive.map((w) => (Number.isFinite(w) ? w : null)) }, { id: 'stable', label: t.stable, values: stable }],
    });
    table.replaceChildren(
      h('caption', { className: 'sr-only', textContent: t.tableCaption }),
      h('thead', {}, h('tr', {}, ...[t.colKey, t.colLogit, t.colNaive, t.colStable].map((x) => h('th', { scope: 'col', textContent: x })))),
      h('tbody', {}, ...last.logits.map((z, j) => h('tr', {},
        cell('th', String(j + 1)), cell('td', fixed(z, 1)),
        cell('td', fixed(naive[j]!, 4), Number.isNaN(naive[j]!) ? 'c10-nan' : ''), cell('td', fixed(stable[j]!, 4))))));
    // Broken when the naive weights are not the stable ones: NaN from inf / inf, or all 0 when
    // only the sum overflowed (every term finite, their sum past the type's largest value).
    const broken = naive.some((w, j) => !(Math.abs(w - stable[j]!) <= 1e-3));
    status.dataset.broken = String(broken);
    status.textContent = !broken ? t.ok : last.naive.nanCount > 0 || last.naive.infCount > 0
      ? fill(t.broken, { inf: last.naive.infCount, nan: last.naive.nanCount }) : t.sumOverflow;
  };
  store.on((_, changed) => (changed.has('c') || changed.has('dtype')) && draw());
  draw();
  fig.body.append(controls, h('div', { className: 'panels c10-panels' }, chart.el, h('div', { className: 'table-scroll' }, table)), status);
  return fig.el;
}

export function overflowFigure(ctx: Ctx, store: Store<Spec>): HTMLElement {
  const t = ctx.t.overflow;
  const chart = new BarChart('c10-overflow-chart');
  const table = testId(h('table', { className: 'row-stats c10-stats' }), 'c10-overflow-table');
  let last = overflow(ctx.qk, store.get().logd, store.get().a);
  const fig = new FigureFrame(ctx.cat, {
    id: 'figure-c10-overflow', title: t.title, caption: t.caption,
    onReset: () => store.reset(['logd', 'a']),
    charts: () => [{ title: t.chartTitle, parts: chart.parts() }],
    data: () => ({ columns: ['d', 'a', 'dot', 'scaled', 'dot_fits_fp16', 'scaled_fits_fp16'], rows: [[last.d, store.get().a, last.dot, last.scaled, String(last.dotFits), String(last.scaledFits)]] }),
  });
  const controls = controlGroup(ctx.cat.common.controls,
    slider(store, 'logd', { id: 'c10-d', label: t.d, min: 4, max: 14, step: 1, format: (v) => String(2 ** v) }),
    slider(store, 'a', { id: 'c10-a', label: t.a, min: 0.5, max: 8, step: 0.25, format: (v) => fixed(v, 2) }));
  const draw = () => {
    const { logd, a } = store.get();
    last = overflow(ctx.qk, logd, a);
    chart.update({
      label: t.chartTitle, categories: [t.dot, t.scaled], x: { label: t.axisWhich }, y: { label: t.axisScore, scale: 'log', domain: [0.1, 1e7] },
      series: [{ id: 'score', label: t.valueSeries, values: [last.dot, last.scaled] }, { id: 'limit', label: t.limitSeries, values: [FP16_MAX, FP16_MAX] }],
    });
    const row = (name: string, v: number, fits: boolean) => h('tr', { className: fits ? '' : 'c10-over' },
      cell('th', name), cell('td', shortNumber(v)), cell('td', fits ? t.fits : t.overflows));
    table.replaceChildren(
      h('caption', { className: 'sr-only', textContent: t.tableCaption }),
      h('thead', {}, h('tr', {}, ...[t.colWhat, t.colValue, t.colFp16].map((x) => h('th', { scope: 'col', textContent: x })))),
      h('tbody', {}, row(t.dot, last.dot, last.dotFits), row(t.scaled, last.scaled, last.scaledFits)));
    table.dataset.dotFits = String(last.dotFits);
  };
  store.on((_, changed) => (changed.has('logd') || changed.has('a')) && draw());
  draw();
  fig.body.append(controls, h('div', { className: 'panels c10-panels' }, chart.el, h('div', {}, h('div', { className: 'table-scroll' }, table), h('p', { className: 'hint', textContent: t.limit }))));
  return fig.el;
}
