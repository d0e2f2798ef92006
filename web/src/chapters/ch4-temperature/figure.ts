/**
 * Figure 4.1: the temperature slider over the shared example (3 queries x 6 keys), with
 * the weights as a heatmap, the selected row's weights at tau against tau = 1 as bars, live
 * readouts (entropy H, max weight, effective support exp(H), distance to the hard argmax)
 * and the entropy of every row against tau, from a sweep of the core's forward().
 */
import type { ForwardResult } from '@qkscope/wasm';
import { fill } from '../../i18n';
import { Heatmap } from '../../charts/heatmap';
import { LineChart } from '../../charts/line';
import { BarChart } from '../../charts/bars';
import { matricesTable } from '../../charts/export';
import { fixed, trimmed } from '../../model/format';
import { row } from '../../model/matrix';
import type { ChapterContext } from '../types';
import type { Store } from '../shared/store';
import { h, testId } from '../shared/dom';
import { labelNodes } from '../../charts/label';
import { FigureFrame } from '../shared/figure';
import { controlGroup, radios, slider } from '../shared/controls';
import { C4_SCORES, distanceToHard, entropySweep, logGrid, run } from './model';
import type { Ch4Spec } from './model';
import type { Ch4Text } from './en';

type Ctx = ChapterContext<Ch4Text>;

/** τ as shown in labels: 3 significant digits. */
export function tauText(tau: number): string {
  return trimmed(Number(tau.toPrecision(3)), 4);
}

/** One readout: a label, a big number and a note; the number also sits in data-value. */
function readout(id: string, label: string): { el: HTMLElement; set: (value: number, text: string, note: string) => void } {
  const value = h('span', { className: 'c4-value' });
  const note = h('span', { className: 'c4-note' });
  const el = testId(h('div', { className: 'c4-readout' }, h('span', { className: 'c4-label' }, ...labelNodes(label)), value, note), id);
  return {
    el,
    set: (v, text, n) => {
      el.dataset.value = String(v);
      value.textContent = text;
      note.textContent = n;
    },
  };
}

export function temperatureFigure(ctx: Ctx, store: Store<Ch4Spec>): HTMLElement {
  const t = ctx.t.fig;
  const c = ctx.cat.common;
  const L = C4_SCORES[0]!.length;
  const taus = logGrid(0.01, 100, 40);
  const sweep = entropySweep(ctx.qk, taus); // (rows, taus): independent of the controls

  const controls = controlGroup(c.controls,
    slider(store, 'tau', { id: 'c4-tau', label: t.tau, min: 0.01, max: 100, step: 0.02, scale: 'log', format: tauText, hint: t.tauHint }),
    radios(store, 'row', { id: 'c4-row', label: t.row, options: C4_SCORES.map((_, i) => [String(i + 1), fill(t.rowOption, { i: i + 1 })] as const) }),
  );

  const hm = new Heatmap('c4-weights');
  const bars = new BarChart('c4-bars');
  const line = new LineChart('c4-entropy');
  const logits = testId(h('p', { className: 'hint c4-logits' }), 'c4-logits');
  const rH = readout('c4-read-h', t.readH);
  const rMax = readout('c4-read-max', t.readMax);
  const rSup = readout('c4-read-support', t.readSupport);
  const rHard = readout('c4-read-hard', t.readHard);
  const readouts = h('div', { className: 'c4-readouts' }, rH.el, rMax.el, rSup.el, rHard.el);
  readouts.setAttribute('aria-live', 'polite');
  const top = h('div', { className: 'panels c4-row' }, h('div', { className: 'panel' }, hm.el), h('div', { className: 'panel' }, bars.el, logits));

  let last: ForwardResult | null = null;
  const draw = () => {
    const { tau, row: rowText } = store.get();
    const i = Number(rowText) - 1;
    const r = run(ctx.qk, tau);
    const one = run(ctx.qk, 1);
    const hard = run(ctx.qk, tau, { normalizer: 'hard' });
    last = r;
    hm.update({
      values: r.weights, palette: 'unit', decimals: 3, rowAxis: c.axisQuery, colAxis: c.axisKey, label: t.weights,
      cellLabel: (a, b, v) => fill(c.cellLabel, { row: c.axisQuery, i: a, col: c.axisKey, j: b, value: v }),
      maskedText: c.maskedCell, legendTitle: c.legendWeight,
    });
    const keys = Array.from({ length: L }, (_, j) => String(j + 1));
    bars.update({
      label: fill(t.rowBars, { i: i + 1, tau: tauText(tau) }),
      categories: keys, x: { label: t.keyAxis }, y: { label: t.weightAxis, domain: [0, 1] }, height: 240,
      series: [
        { id: 'tau', label: fill(t.atTau, { tau: tauText(tau) }), values: row(r.weights, i) },
        { id: 'one', label: t.atOne, values: row(one.weights, i), color: 3 },
      ],
    });
    logits.textContent = fill(t.logits, { z: `[${C4_SCORES[i]!.map((x) => trimmed(x, 2)).join(', ')}]` });
    const H = r.entropy[i]!;
    const hardRow = row(hard.weights, i);
    const d = distanceToHard(row(r.weights, i), hardRow);
    rH.set(H, fixed(H, 4), fill(t.readLog, { max: fixed(Math.log(L), 4) }));
    rMax.set(r.maxWeight[i]!, fixed(r.maxWeight[i]!, 4), '');
    rSup.set(Math.exp(H), fixed(Math.exp(H), 3), fill(t.readKeys, { n: L }));
    rHard.set(d, d < 1e-4 ? d.toExponential(1).replace('-', '\u2212') : fixed(d, 4), fill(t.readHardNote, { j: hardRow.indexOf(1) + 1 }));
    line.update({
      label: t.entropyChart,
      x: { label: 'τ', scale: 'log' },
      y: { label: t.entropy, domain: [0, 1.9] },
      height: 260,
      series: [
        ...sweep.map((hs, k) => ({ id: `row${k + 1}`, label: fill(t.rowSeries, { i: k + 1 }), points: taus.map((x, n) => ({ x, y: hs[n]! })), markers: false })),
        { id: 'uniform', label: t.uniform, points: [{ x: taus[0]!, y: Math.log(L) }, { x: taus[taus.length - 1]!, y: Math.log(L) }], dashed: true, markers: false, color: 6 },
      ],
      marker: { x: tau, label: `τ = ${tauText(tau)}`, at: 'bottom' },
    });
  };

  const frame = new FigureFrame(ctx.cat, {
    id: 'figure-c4-temp',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(),
    charts: () => [{ title: t.weights, parts: hm.parts() }, { parts: bars.parts() }, { title: t.entropyChart, parts: line.parts() }],
    data: () => {
      const s = store.get();
      const table = last ? matricesTable([['weights', last.weights]], 'query', 'key') : { columns: [], rows: [] };
      return {
        ...table,
        json: {
          tau: s.tau, logits: C4_SCORES, weights: table.json,
          entropy: last ? Array.from(last.entropy) : [], maxWeight: last ? Array.from(last.maxWeight) : [],
          sweep: { tau: taus, entropy: sweep },
        },
      };
    },
  });
  frame.body.append(controls, top, readouts, h('div', { className: 'c4-line' }, line.el));
  store.on(() => draw());
  draw();
  return frame.el;
}
