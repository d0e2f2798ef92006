/**
 * Figure 10.3: static attention in graphs. Five nodes, a fixed graph with self-loops as the
 * keep mask, seeded node features; the core scores every edge with linear concat (GAT's
 * a^T [W h_i || W h_j] without its LeakyReLU, which is monotonic and so keeps the ranking) and
 * with additive attention (GATv2's form, tanh in place of LeakyReLU; Brody et al. 2022).
 * Each node's first choice among its neighbours is marked: under linear concat the ranking is
 * the same for every node, so two nodes that see the same neighbours pick the same one.
 */
import type { Matrix, QkScope } from '@qkscope/wasm';
import { fill } from '../../i18n';
import { Heatmap } from '../../charts/heatmap';
import { seededMatrix } from '../../model/random';
import type { ChapterContext } from '../types';
import type { Store } from '../shared/store';
import { h, testId } from '../shared/dom';
import { FigureFrame } from '../shared/figure';
import { controlGroup, integer } from '../shared/controls';
import type { makeSpec } from './model';
import type { Ch10Text } from './en';

type Ctx = ChapterContext<Ch10Text>;
type Spec = ReturnType<typeof makeSpec>;

export const NODES = 5;
/** Undirected edges of the small graph; every node also sees itself. */
const EDGES: readonly [number, number][] = [[0, 1], [0, 2], [1, 2], [1, 3], [2, 3], [2, 4], [3, 4]];
export const ADJ: boolean[][] = Array.from({ length: NODES }, (_, i) =>
  Array.from({ length: NODES }, (_, j) => i === j || EDGES.some(([a, b]) => (a === i && b === j) || (a === j && b === i))));

export interface GatResult {
  /** The core's weights, (NODES, NODES). */
  matrices: { static: Matrix; dynamic: Matrix };
  weights: { static: number[][]; dynamic: number[][] };
  /** First choice of each node among its neighbours. */
  first: { static: number[]; dynamic: number[] };
}

function rowsOf(data: Float32Array): number[][] {
  return Array.from({ length: NODES }, (_, i) => Array.from(data.subarray(i * NODES, (i + 1) * NODES)));
}

const argmax = (row: number[]) => row.reduce((best, x, j) => (x > row[best]! ? j : best), 0);

export function gat(qk: QkScope, seed: number): GatResult {
  const x = seededMatrix(seed, 10, NODES, 3);
  const base = { query: x, key: x, value: x, mask: ADJ, seed, hidden: 4 };
  const sm = qk.forward({ ...base, score: 'linear_concat' }).weights;
  const dm = qk.forward({ ...base, score: 'additive' }).weights;
  const st = rowsOf(sm.data), dy = rowsOf(dm.data);
  return { matrices: { static: sm, dynamic: dm }, weights: { static: st, dynamic: dy }, first: { static: st.map(argmax), dynamic: dy.map(argmax) } };
}

export function gatFigure(ctx: Ctx, store: Store<Spec>): HTMLElement {
  const t = ctx.t.gat, c = ctx.cat.common;
  const maps = { static: new Heatmap('c10-gat-static'), dynamic: new Heatmap('c10-gat-dynamic') };
  const titles = { static: t.staticTitle, dynamic: t.dynamicTitle };
  const firsts = { static: testId(h('p', { className: 'hint' }), 'c10-gat-static-first'), dynamic: testId(h('p', { className: 'hint' }), 'c10-gat-dynamic-first') };
  let last = gat(ctx.qk, store.get().gseed);
  const fig = new FigureFrame(ctx.cat, {
    id: 'figure-c10-gat', title: t.title, caption: t.caption,
    onReset: () => store.reset(['gseed']),
    charts: () => (['static', 'dynamic'] as const).map((k) => ({ title: titles[k], parts: maps[k].parts() })),
    data: () => ({ columns: ['score', 'node', 'neighbour', 'weight'], rows: (['static', 'dynamic'] as const).flatMap((k) => last.weights[k].flatMap((r, i) => r.map((w, j) => [k, i + 1, j + 1, w]))) }),
  });
  const controls = controlGroup(c.controls, integer(store, 'gseed', { id: 'c10-gseed', label: t.seed, min: 0, max: 999_999 }));
  const draw = () => {
    last = gat(ctx.qk, store.get().gseed);
    for (const k of ['static', 'dynamic'] as const) {
      maps[k].update({
        values: last.matrices[k], masked: (i, j) => !ADJ[i]![j], palette: 'unit', decimals: 2, rowAxis: t.node, colAxis: t.neighbour, label: titles[k],
        cellLabel: (i, j, value) => fill(c.cellLabel, { row: t.node, i, col: t.neighbour, j, value }), maskedText: t.noEdge, legendTitle: c.legendWeight, maskedLegend: t.noEdge,
      });
      firsts[k].textContent = fill(t.first, { list: last.first[k].map((j, i) => `${i + 1}→${j + 1}`).join(', ') });
      firsts[k].dataset.first = last.first[k].join(',');
    }
  };
  store.on((_, changed) => changed.has('gseed') && draw());
  draw();
  const panel = (k: 'static' | 'dynamic') => h('div', { className: 'panel' }, h('h3', { textContent: titles[k] }), maps[k].el, firsts[k]);
  fig.body.append(controls, h('div', { className: 'panels c10-panels' }, panel('static'), panel('dynamic')));
  return fig.el;
}
