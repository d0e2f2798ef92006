/**
 * Chapter 5's T5 figure: the bucket of every (query, key) pair from the core's t5Buckets()
 * (Raffel et al. 2020): exact buckets near the aligned diagonal, logarithmic ones beyond,
 * bidirectional or causal, top-left or bottom-right alignment; plus the distance range each
 * bucket covers.
 */
import type { CausalAlignment, Matrix } from '@qkscope/wasm';
import { fill } from '../../i18n';
import { Heatmap } from '../../charts/heatmap';
import { matricesTable } from '../../charts/export';
import { h, testId } from '../shared/dom';
import { FigureFrame } from '../shared/figure';
import { controlGroup, radios, slider } from '../shared/controls';
import type { Store } from '../shared/store';
import type { Ch5Spec } from './model';
import type { Ctx } from './figures-masks';

const LQ = 4;
const LK = 8;

/** "bucket: lo–hi" for the distances into the past (r = -distance); the last bucket, which
 *  every farther distance shares, as "lo+". */
function ranges(row: Matrix, last: string): string[] {
  const out: string[] = [];
  let start = 0;
  for (let d = 1; d <= row.cols; d++) {
    const b = row.data[row.cols - 1 - (d - 1)]!;
    const next = d < row.cols ? row.data[row.cols - 1 - d]! : NaN;
    if (next !== b) {
      const span = d === row.cols ? `${start}${last}` : start === d - 1 ? String(start) : `${start}–${d - 1}`;
      out.push(`${b}: ${span}`);
      start = d;
    }
  }
  return out;
}

/** Figure 5.3: T5 bucketed relative positions. */
export function t5Figure(ctx: Ctx, store: Store<Ch5Spec>): HTMLElement {
  const t = ctx.t.figT5;
  const c = ctx.cat.common;
  const hm = new Heatmap('c5-t5-buckets');
  const summary = testId(h('p', { className: 'figure-summary' }), 'c5-t5-summary');
  let last: Matrix | null = null;

  const draw = () => {
    const s = store.get();
    const opts = { numBuckets: s.t5n, maxDistance: s.t5d, bidirectional: s.t5dir === 'bi' };
    const m = ctx.qk.t5Buckets({ queries: LQ, keys: LK, causalAlignment: s.t5align as CausalAlignment, ...opts });
    last = m;
    hm.update({
      values: m, palette: 'diverging', decimals: 0, rowAxis: c.axisQuery, colAxis: c.axisKey, label: t.chart,
      cellLabel: (i, j, value) => `${t.chart}: ${fill(c.cellLabel, { row: c.axisQuery, i, col: c.axisKey, j, value })}`,
      maskedText: c.maskedCell, legendTitle: t.legend,
    });
    // One query at the end of a long key row: r = 0, -1, -2, ... into the past.
    const perSide = opts.bidirectional ? Math.floor(s.t5n / 2) : s.t5n;
    const past = ctx.qk.t5Buckets({ queries: 1, keys: Math.max(s.t5d, Math.floor(perSide / 2)) + 2, causalAlignment: 'bottom_right', ...opts });
    summary.textContent = fill(t.summary, { ranges: ranges(past, '+').join('; ') });
    summary.dataset.buckets = JSON.stringify(Array.from(m.data));
  };

  const frame = new FigureFrame(ctx.cat, {
    id: 'figure-c5-t5',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['t5n', 't5d', 't5dir', 't5align']),
    charts: () => [{ title: t.chart, parts: hm.parts() }],
    data: () => {
      const table = last ? matricesTable([['bucket', last]], 'query', 'key') : { columns: [], rows: [] };
      return { ...table, json: { settings: store.get(), buckets: table.json } };
    },
  });
  const controls = controlGroup(c.controls,
    slider(store, 't5n', { id: 'c5-t5n', label: t.buckets, min: 2, max: 32, step: 1 }),
    slider(store, 't5d', { id: 'c5-t5d', label: t.distance, min: 1, max: 64, step: 1 }),
    radios(store, 't5dir', { id: 'c5-t5dir', label: t.direction, options: [['bi', t.bi], ['causal', t.causal]] }),
    radios(store, 't5align', { id: 'c5-t5align', label: t.alignment, options: [['top_left', t.topLeft], ['bottom_right', t.bottomRight]] }));
  frame.body.append(controls, summary, h('div', { className: 'panel' }, h('h3', { textContent: t.chart }), hm.el));
  store.on((_, ch) => ['t5n', 't5d', 't5dir', 't5align'].some((k) => ch.has(k as keyof Ch5Spec)) && draw());
  draw();
  return frame.el;
}
