/**
 * Chapter 5's mask figures, computed by the core's forward():
 * - Figure 5.1: key padding, causal and sliding-window masks, top-left vs bottom-right
 *   causal alignment side by side (keep j <= i, or j <= i + L_k - L_q).
 * - Figure 5.2: ALiBi slopes for H heads (2^(-8h/H), interleaved otherwise) and one head's
 *   bias -m|j - i| (read back from the core's scores) and weights.
 * - Figure 5.4: a 5-node graph whose adjacency (plus self-loops) is the keep mask.
 */
import type { CausalAlignment, ForwardOptions, ForwardResult, Matrix } from '@qkscope/wasm';
import { fill } from '../../i18n';
import { coreMessage } from '../../i18n/core-errors';
import { Heatmap, type HeatmapSpec } from '../../charts/heatmap';
import { matricesTable } from '../../charts/export';
import { fitDecimals, trimmed } from '../../model/format';
import { maskedCells } from '../../model/matrix';
import type { ChapterContext } from '../types';
import type { Store } from '../shared/store';
import { h, testId } from '../shared/dom';
import { labelNodes, labelPlain, setLabel } from '../../charts/label';
import { FigureFrame } from '../shared/figure';
import { checkbox, controlGroup, slider } from '../shared/controls';
import { type Ch5Spec, NODES, PAIRS, adjacency, alibiSlopes, tokens, zeros } from './model';
import type { Ch5Text } from './en';

export type Ctx = ChapterContext<Ch5Text>;

export const isMasked = (r: { maskedScores: Matrix }) => maskedCells(r.maskedScores);

/** Heatmap spec for weights (unit palette) or signed values (diverging). */
export function hmSpec(ctx: Ctx, values: Matrix, label: string, opts: { masked?: (i: number, j: number) => boolean; signed?: boolean } = {}): HeatmapSpec {
  const c = ctx.cat.common;
  return {
    values,
    palette: opts.signed ? 'diverging' : 'unit',
    decimals: opts.signed ? fitDecimals(values.data, 3, 6) : values.cols > 6 ? 2 : 3,
    rowAxis: c.axisQuery,
    colAxis: c.axisKey,
    label,
    cellLabel: (i, j, value) => `${label}: ${fill(c.cellLabel, { row: c.axisQuery, i, col: c.axisKey, j, value })}`,
    maskedText: c.maskedCell,
    legendTitle: opts.signed ? c.legendScore : c.legendWeight,
    masked: opts.masked,
    maskedLegend: opts.masked ? c.maskedCell : undefined,
  };
}

/** Figure 5.1: the same masks under both causal alignments. */
export function maskFigure(ctx: Ctx, store: Store<Ch5Spec>): HTMLElement {
  const t = ctx.t.figMask;
  const controls = controlGroup(ctx.cat.common.controls,
    slider(store, 'lq', { id: 'c5-lq', label: t.lq, min: 1, max: 8, step: 1 }),
    slider(store, 'lk', { id: 'c5-lk', label: t.lk, min: 1, max: 8, step: 1 }),
    slider(store, 'pad', { id: 'c5-pad', label: t.pad, min: 0, max: 7, step: 1 }),
    checkbox(store, 'causal', { id: 'c5-causal', label: t.causal }),
    checkbox(store, 'win', { id: 'c5-win', label: t.window }),
    slider(store, 'left', { id: 'c5-left', label: t.left, min: 0, max: 7, step: 1 }),
    slider(store, 'right', { id: 'c5-right', label: t.right, min: 0, max: 7, step: 1 }),
  );
  const aligns: [CausalAlignment, string, string][] = [['top_left', t.topLeft, 'tl'], ['bottom_right', t.bottomRight, 'br']];
  const panels = aligns.map(([align, title, short]) => {
    const hm = new Heatmap(`c5-mask-${short}`);
    const note = testId(h('p', { className: 'hint c5-note' }), `c5-visible-${short}`);
    const el = h('div', { className: 'panel' }, h('h3', { textContent: title }), hm.el, note);
    return { align, title, hm, note, el, result: null as ForwardResult | null };
  });
  panels[0]!.hm.onCellFocus = (cell) => panels[1]!.hm.highlight(cell);
  panels[1]!.hm.onCellFocus = (cell) => panels[0]!.hm.highlight(cell);
  const error = h('p', { className: 'c5-error', hidden: true });

  const draw = () => {
    const s = store.get();
    const key = tokens(s.lk, 0.5);
    const base: ForwardOptions = { query: tokens(s.lq), key, value: key, keyLength: Math.max(0, s.lk - s.pad), causal: s.causal };
    if (s.win) base.window = { left: s.left, right: s.right };
    error.hidden = true;
    for (const p of panels) {
      try {
        const r = ctx.qk.forward({ ...base, causalAlignment: p.align });
        p.result = r;
        p.hm.update(hmSpec(ctx, r.weights, p.title, { masked: isMasked(r) }));
        const counts: number[] = [];
        for (let i = 0; i < r.weights.rows; i++) {
          let n = 0;
          for (let j = 0; j < r.weights.cols; j++) if (!isMasked(r)(i, j)) n++;
          counts.push(n);
        }
        const empty = counts.map((n, i) => (n === 0 ? i + 1 : 0)).filter((x) => x > 0);
        p.note.dataset.counts = counts.join(',');
        p.note.textContent = `${fill(t.visible, { counts: counts.join(', ') })}. ${fill(t.empty, { rows: empty.length ? empty.join(', ') : t.none })}`;
      } catch (e) {
        p.result = null;
        error.textContent = fill(ctx.cat.common.cannotCompute, { message: coreMessage(ctx.lang, e) });
        error.hidden = false;
      }
    }
  };
  const frame = new FigureFrame(ctx.cat, {
    id: 'figure-c5-mask',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['lq', 'lk', 'pad', 'causal', 'win', 'left', 'right']),
    charts: () => panels.filter((p) => p.result).map((p) => ({ title: p.title, parts: p.hm.parts() })),
    data: () => matricesTable(panels.filter((p) => p.result).map((p) => [`${p.align}.weights`, p.result!.weights]), 'query', 'key'),
  });
  frame.body.append(controls, error, h('div', { className: 'panels c5-row' }, ...panels.map((p) => p.el)));
  store.on((_, ch) => ['lq', 'lk', 'pad', 'causal', 'win', 'left', 'right'].some((k) => ch.has(k as never)) && draw());
  draw();
  return frame.el;
}

/** Figure 5.2: ALiBi slopes for H heads and one head's bias and weights. */
export function alibiFigure(ctx: Ctx, store: Store<Ch5Spec>): HTMLElement {
  const t = ctx.t.figAlibi;
  const L = 6;
  const controls = controlGroup(ctx.cat.common.controls,
    slider(store, 'heads', { id: 'c5-heads', label: t.heads, min: 1, max: 16, step: 1 }),
    slider(store, 'head', { id: 'c5-head', label: t.head, min: 1, max: 16, step: 1 }),
  );
  const list = testId(h('ol', { className: 'c5-slopes' }), 'c5-slopes');
  const how = testId(h('p', { className: 'hint' }), 'c5-construction');
  const slopeText = testId(h('p', { className: 'c5-summary' }), 'c5-slope');
  const hmBias = new Heatmap('c5-alibi-bias');
  const hmW = new Heatmap('c5-alibi-weights');
  hmBias.onCellFocus = (cell) => hmW.highlight(cell);
  hmW.onCellFocus = (cell) => hmBias.highlight(cell);
  let last: { bias: Matrix; weights: Matrix } | null = null;

  const draw = () => {
    const s = store.get();
    const slopes = alibiSlopes(s.heads);
    const head = Math.min(s.head, s.heads);
    list.replaceChildren(...slopes.map((m, k) => {
      // The accessible name starts with the visible text (the slope), then says whose it is.
      const b = testId(h('button', { type: 'button', className: 'c5-chip' }, trimmed(m, 5), h('span', { className: 'sr-only', textContent: ` (${fill(t.headN, { h: k + 1 })})` })), `c5-slope-${k + 1}`);
      b.dataset.slope = String(m);
      b.setAttribute('aria-pressed', String(k + 1 === head));
      b.addEventListener('click', () => store.set({ head: k + 1 }));
      return h('li', {}, b);
    }));
    list.setAttribute('aria-label', labelPlain(fill(t.slopes, { h: head })));
    const p = 2 ** Math.floor(Math.log2(s.heads));
    setLabel(how, fill(t.construction, { how: p === s.heads ? t.power : fill(t.interleaved, { p, q: 2 * p }) }));
    const m = slopes[head - 1]!;
    slopeText.textContent = fill(t.slope, { h: head, m: trimmed(m, 6) });
    slopeText.dataset.slope = String(m);
    const key = tokens(L, 0.5);
    const opts: ForwardOptions = { query: zeros(L, 2), key, value: key, causal: true };
    const a = ctx.qk.forward({ ...opts, alibiSlope: m });
    const b = ctx.qk.forward(opts);
    const bias = { rows: L, cols: L, data: a.scores.data.map((x, k) => x - b.scores.data[k]!) };
    last = { bias, weights: a.weights };
    hmBias.update(hmSpec(ctx, bias, t.bias, { signed: true }));
    hmW.update(hmSpec(ctx, a.weights, t.weights, { masked: isMasked(a) }));
  };
  const frame = new FigureFrame(ctx.cat, {
    id: 'figure-c5-alibi',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['heads', 'head']),
    charts: () => [{ title: t.bias, parts: hmBias.parts() }, { title: t.weights, parts: hmW.parts() }],
    data: () => {
      const s = store.get();
      const table = last ? matricesTable([['bias', last.bias], ['weights', last.weights]], 'query', 'key') : { columns: [], rows: [] };
      return { ...table, json: { heads: s.heads, head: Math.min(s.head, s.heads), slopes: alibiSlopes(s.heads), matrices: table.json } };
    },
  });
  frame.body.append(controls,
    h('div', { className: 'c5-slope-box' }, h('p', { className: 'c5-label' }, ...labelNodes(t.slopeList)), list, how, slopeText),
    h('div', { className: 'panels c5-row' },
      h('div', { className: 'panel' }, h('h3', { textContent: t.bias }), hmBias.el),
      h('div', { className: 'panel' }, h('h3', { textContent: t.weights }), hmW.el)));
  store.on((_, ch) => (ch.has('heads') || ch.has('head')) && draw());
  draw();
  return frame.el;
}

const SVGNS = 'http://www.w3.org/2000/svg';
function svgEl<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

/** Figure 5.4: graph adjacency as the keep mask. */
export function graphFigure(ctx: Ctx, store: Store<Ch5Spec>): HTMLElement {
  const t = ctx.t.figGraph;
  const pos = Array.from({ length: NODES }, (_, k) => [110 + 78 * Math.sin((2 * Math.PI * k) / NODES), 100 - 78 * Math.cos((2 * Math.PI * k) / NODES)] as const);
  const svg = svgEl('svg', { viewBox: '0 0 220 200', class: 'c5-graph', role: 'img' });
  svg.setAttribute('aria-label', t.graph);
  testId(svg, 'c5-graph');
  const edgeBoxes = PAIRS.map(([a, b], k) => {
    const input = testId(h('input', { type: 'checkbox', id: `c5-edge-${a + 1}-${b + 1}` }), `c5-edge-${a + 1}-${b + 1}`);
    input.addEventListener('change', () => {
      const e = store.get().edges;
      store.set({ edges: input.checked ? e | (1 << k) : e & ~(1 << k) });
    });
    return { k, input, el: h('label', { className: 'check c5-edge', htmlFor: input.id, title: fill(t.edge, { a: a + 1, b: b + 1 }) }, input, ` ${a + 1}–${b + 1}`) };
  });
  const edgeSet = h('fieldset', { className: 'control c5-edges' }, h('legend', { textContent: t.edges }), ...edgeBoxes.map((e) => e.el));
  const controls = controlGroup(ctx.cat.common.controls, edgeSet, checkbox(store, 'self', { id: 'c5-self', label: t.self }));
  const hm = new Heatmap('c5-graph-weights');
  let last: ForwardResult | null = null;

  const draw = () => {
    const s = store.get();
    edgeBoxes.forEach((e) => (e.input.checked = Boolean(s.edges & (1 << e.k))));
    svg.replaceChildren();
    PAIRS.forEach(([a, b], k) => {
      if (s.edges & (1 << k)) svg.append(svgEl('line', { x1: pos[a]![0], y1: pos[a]![1], x2: pos[b]![0], y2: pos[b]![1], class: 'c5-graph-edge' }));
    });
    pos.forEach(([x, y], k) => {
      const g = svgEl('g', { class: 'c5-graph-node' });
      g.append(svgEl('circle', { cx: x, cy: y, r: 15 }));
      const text = svgEl('text', { x, y, dy: '0.35em', 'text-anchor': 'middle' });
      text.textContent = String(k + 1);
      g.append(text);
      svg.append(g);
    });
    const X = tokens(NODES, 0.3);
    last = ctx.qk.forward({ query: X, key: X, value: X, mask: adjacency(s.edges, s.self) });
    hm.update(hmSpec(ctx, last.weights, t.weights, { masked: isMasked(last) }));
  };
  const frame = new FigureFrame(ctx.cat, {
    id: 'figure-c5-graph',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['edges', 'self']),
    charts: () => [{ title: t.graph, parts: [svg] }, { title: t.weights, parts: hm.parts() }],
    data: () => {
      const s = store.get();
      const table = last ? matricesTable([['weights', last.weights]], 'query', 'key') : { columns: [], rows: [] };
      return { ...table, json: { edges: PAIRS.filter((_, k) => s.edges & (1 << k)).map(([a, b]) => [a + 1, b + 1]), selfLoops: s.self, weights: table.json } };
    },
  });
  frame.body.append(controls, h('div', { className: 'panels c5-row' },
    h('div', { className: 'panel' }, h('h3', { textContent: t.graph }), svg),
    h('div', { className: 'panel' }, h('h3', { textContent: t.weights }), hm.el)));
  store.on((_, ch) => (ch.has('edges') || ch.has('self')) && draw());
  draw();
  return frame.el;
}
