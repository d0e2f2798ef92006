/**
 * Chapter 9's figure and table:
 * - Figure 9.1: per-head, per-row entropy (as H / log L_k), max weight and effective support
 *   (e^H / L_k) from multiHeadForward, the weights of one head, and per-head means with a verdict.
 * - The selection guide (docs/facts.md §9) as a table built from the catalog.
 */
import type { ScoreName } from '@qkscope/wasm';
import { fill } from '../../i18n';
import { Heatmap, type HeatmapSpec } from '../../charts/heatmap';
import { fixed } from '../../model/format';
import type { RowMajor } from '../../model/matrix';
import type { ChapterContext } from '../types';
import type { Store } from '../shared/store';
import { h, testId } from '../shared/dom';
import { labelNodes, labelPlain, setLabel } from '../../charts/label';
import { FigureFrame } from '../shared/figure';
import { controlGroup, integer, select, slider } from '../shared/controls';
import { type Diagnostics, diagnose, statMatrix } from './model';
import type { Ch9Spec } from './model';
import type { Ch9Text } from './en';

type Ctx = ChapterContext<Ch9Text>;

export function diagnosticsFigure(ctx: Ctx, store: Store<Ch9Spec>): HTMLElement {
  const t = ctx.t.fig;
  const c = ctx.cat.common;
  const names = ctx.qk.scoreFunctions.map((f) => f.name);
  // Numbers on canvases: H and L change every number of the four maps at once, which as SVG
  // text was a relayout of every cell (native/bench/NOTES.md, "Sliders, sixth pass"); steady
  // boxes: heads and L change the maps' shapes, which resized their <svg>s ("tenth pass").
  const opts = { canvasNumbers: true, steadyBox: true };
  const entropyHm = new Heatmap('c9-entropy', opts);
  const maxHm = new Heatmap('c9-maxweight', opts);
  const supportHm = new Heatmap('c9-support', opts);
  const weightsHm = new Heatmap('c9-weights', opts);
  const maps = [entropyHm, maxHm, supportHm];
  for (const m of maps) m.onCellFocus = (cell) => maps.forEach((o) => o !== m && o.highlight(cell));
  const table = testId(h('table', { className: 'row-stats c9-table' }), 'c9-table');
  const logLNote = testId(h('p', { className: 'hint' }), 'c9-logl');
  const weightsTitle = h('h3');
  let d: Diagnostics | null = null;
  // The table's caption and header are drawn once; draw() fills its body.
  const body = h('tbody');
  table.append(h('caption', { className: 'sr-only', textContent: t.tableCaption }),
    h('thead', {}, h('tr', {}, ...[t.colHead, t.colH, t.colHFrac, t.colMax, t.colSupport, t.colVerdict].map((x) => h('th', { scope: 'col' }, ...labelNodes(x))))),
    body);
  let drawnLogL = '';
  const setData = (el: HTMLElement, key: string, value: string) => {
    if (el.dataset[key] !== value) el.dataset[key] = value;
  };

  const draw = () => {
    const s = store.get();
    d = diagnose(ctx.qk, { heads: s.heads, L: s.L, score: s.score as ScoreName, sigma: s.sigma, tau: s.tau, seed: s.seed });
    const dd = d;
    const base = (values: RowMajor, label: string, cellLabel: HeatmapSpec['cellLabel']): HeatmapSpec => ({
      values, palette: 'unit', decimals: 2, rowAxis: t.axisHead, colAxis: c.axisQuery, label, cellLabel,
      maskedText: c.maskedCell, legendTitle: t.legendFraction,
    });
    entropyHm.update(base(statMatrix(dd, (x) => x.entropy, dd.logL), labelPlain(t.entropyTitle), (i, j) => {
      const H = dd.heads[i - 1]!.entropy[j - 1]!;
      return labelPlain(fill(t.cellEntropy, { h: i, i: j, H: fixed(H, 3), f: fixed(dd.logL > 0 ? H / dd.logL : 0, 2) }));
    }));
    maxHm.update(base(statMatrix(dd, (x) => x.maxWeight), t.maxTitle, (i, j) => fill(t.cellMax, { h: i, i: j, m: fixed(dd.heads[i - 1]!.maxWeight[j - 1]!, 3) })));
    supportHm.update(base(statMatrix(dd, (x) => x.support, dd.L), labelPlain(t.supportTitle), (i, j) => labelPlain(fill(t.cellSupport, { h: i, i: j, s: fixed(dd.heads[i - 1]!.support[j - 1]!, 2), L: dd.L }))));
    const head = Math.min(s.head, s.heads);
    weightsTitle.textContent = fill(t.weightsTitle, { h: head });
    weightsHm.update({
      values: dd.weights[head - 1]!, palette: 'unit', decimals: 2, rowAxis: c.axisQuery, colAxis: c.axisKey, label: weightsTitle.textContent,
      cellLabel: (i, j, value) => fill(c.cellLabel, { row: c.axisQuery, i, col: c.axisKey, j, value }), maskedText: c.maskedCell, legendTitle: c.legendWeight,
    });
    const logText = fill(t.logL, { v: fixed(dd.logL, 3) });
    if (logText !== drawnLogL) setLabel(logLNote, (drawnLogL = logText));
    // One row per head, updated in place: a dragged slider rewrites only the cells that change.
    while (body.rows.length > dd.heads.length) body.lastElementChild!.remove();
    dd.heads.forEach((hd, k) => {
      const tr = body.rows[k] ?? body.appendChild(h('tr', {}, h('th', { scope: 'row', textContent: String(k + 1) }),
        h('td'), h('td'), h('td'), h('td'), h('td', { className: 'c9-verdict' })));
      const texts = [fixed(hd.meanEntropy, 3), fixed(dd.logL > 0 ? hd.meanEntropy / dd.logL : 0, 2), fixed(hd.meanMax, 3),
        fixed(hd.meanSupport, 2), t.verdict[hd.verdict]];
      texts.forEach((text, n) => {
        // textContent, not setText: the page re-measures a table's scroll box on child-list
        // mutations only (app.ts), and a longer verdict can make this table scroll.
        const td = tr.cells[n + 1]!;
        if (td.textContent !== text) td.textContent = text;
      });
      const verdictClass = `c9-verdict c9-${hd.verdict}`;
      if (tr.cells[5]!.className !== verdictClass) tr.cells[5]!.className = verdictClass;
      setData(tr, 'entropy', String(hd.meanEntropy));
      setData(tr, 'max', String(hd.meanMax));
      setData(tr, 'verdict', hd.verdict);
    });
  };

  const fig = new FigureFrame(ctx.cat, {
    id: 'figure-c9-heads',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(),
    charts: () => [
      { title: t.entropyTitle, parts: entropyHm.parts() },
      { title: t.maxTitle, parts: maxHm.parts() },
      { title: t.supportTitle, parts: supportHm.parts() },
      { title: weightsTitle.textContent ?? '', parts: weightsHm.parts() },
    ],
    data: () => {
      const dd = d!;
      const rows: (string | number)[][] = [];
      dd.heads.forEach((hd, k) => hd.entropy.forEach((H, i) => rows.push([k + 1, i + 1, H, H / dd.logL, hd.maxWeight[i]!, hd.support[i]!])));
      return {
        columns: ['head', 'query', 'entropy_nats', 'entropy_over_log_L', 'max_weight', 'effective_support'],
        rows,
        json: { settings: store.get(), L: dd.L, logL: dd.logL, heads: dd.heads },
      };
    },
  });
  const controls = controlGroup(c.controls,
    select(store, 'score', { id: 'c9-score', label: t.score, options: names.map((n) => [n, ctx.cat.scoreLabels[n] ?? ctx.qk.scoreFunctions.find((f) => f.name === n)!.label] as const) }),
    slider(store, 'sigma', { id: 'c9-sigma', label: t.sigma, min: 0.1, max: 10, step: 0.01, scale: 'log', format: (v) => fixed(v, 2), hint: t.sigmaHint }),
    slider(store, 'tau', { id: 'c9-tau', label: t.tau, min: 0.1, max: 10, step: 0.01, scale: 'log', format: (v) => fixed(v, 2), hint: t.tauHint }),
    slider(store, 'heads', { id: 'c9-heads-count', label: t.heads, min: 1, max: 8, step: 1 }),
    slider(store, 'L', { id: 'c9-l', label: t.L, min: 2, max: 16, step: 1 }),
    slider(store, 'head', { id: 'c9-head', label: t.head, min: 1, max: 8, step: 1 }),
    integer(store, 'seed', { id: 'c9-seed', label: c.seed, min: 0, max: 999_999 }));
  const panel = (title: string | HTMLElement, el: HTMLElement) => h('div', { className: 'panel c9-panel' }, typeof title === 'string' ? h('h3', {}, ...labelNodes(title)) : title, el);
  fig.body.append(controls,
    h('div', { className: 'panels c9-grid' }, panel(t.entropyTitle, entropyHm.el), panel(t.maxTitle, maxHm.el), panel(t.supportTitle, supportHm.el)),
    h('div', { className: 'panels c9-lower' }, h('div', { className: 'c9-table-box' }, h('div', { className: 'table-scroll' }, table), logLNote), panel(weightsTitle, weightsHm.el)));
  store.on(() => draw());
  draw();
  return fig.el;
}

/** The selection guide (§9) as a table. */
export function guideTable(ctx: Ctx): HTMLElement {
  const g = ctx.t.guide;
  const table = testId(h('table', { className: 'c9-guide' }), 'c9-guide');
  table.append(
    h('caption', { textContent: g.caption }),
    h('thead', {}, h('tr', {}, ...[g.colTask, g.colScore, g.colWhy].map((x) => h('th', { scope: 'col', textContent: x })))),
    h('tbody', {}, ...g.rows.map(([task, score, why]) => h('tr', {}, h('th', { scope: 'row', textContent: task! }), h('td', {}, ...labelNodes(score!)), h('td', { textContent: why! })))));
  return h('div', { className: 'c9-guide-box' }, h('div', { className: 'table-scroll' }, table), h('p', { className: 'c9-after', textContent: g.after }));
}
