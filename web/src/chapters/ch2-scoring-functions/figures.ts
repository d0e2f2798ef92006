/**
 * Chapter 2's figures, both driven by one store (one shared Q, K, V):
 * - Figure 2.1: every scoring function of the core's registry side by side, as heatmaps of
 *   weights (or raw-scale scores) with hover/focus synchronized across all of them, the
 *   bilinear W = I + alpha N and additive d_h sliders, editable/pasteable Q, K, V.
 * - Figure 2.2: the difference of the weights of any two functions, A - B.
 */
import type { Matrix, ScoreName } from '@qkscope/wasm';
import { fill } from '../../i18n';
import { coreMessage } from '../../i18n/core-errors';
import { Heatmap, type HeatmapSpec } from '../../charts/heatmap';
import { matricesTable } from '../../charts/export';
import { MatrixEditor } from '../../widget/matrix-editor';
import { cellDecimals, fitDecimals, fixed } from '../../model/format';
import { MATRIX_LIMITS } from '../../model/url-state';
import type { ChapterContext } from '../types';
import type { Store } from '../shared/store';
import { h, testId } from '../shared/dom';
import { setLabel } from '../../charts/label';
import { setText } from '../../charts/attr';
import { FigureFrame } from '../shared/figure';
import { PasteBox } from '../shared/paste';
import { controlGroup, integer, radios, select, slider } from '../shared/controls';
import { tex } from '../shared/rich';
import { type Outcome, difference, diffStats, meanEntropy, optionsFor, runAll } from './model';
import type { Ch2Spec } from './model';
import type { Ch2Text } from './en';

type Ctx = ChapterContext<Ch2Text>;

function label(ctx: Ctx, name: string): string {
  return ctx.cat.scoreLabels[name] ?? ctx.qk.scoreFunctions.find((f) => f.name === name)?.label ?? name;
}

/** Heatmap spec for a (L_q, L_k) matrix of weights, scores or differences. */
function spec(ctx: Ctx, values: Matrix, kind: 'weights' | 'scores' | 'diff', name: string): HeatmapSpec {
  const c = ctx.cat.common;
  const dec = kind === 'weights' ? Math.min(3, cellDecimals(values.cols)) : fitDecimals(values.data, 2, 5);
  return {
    values,
    palette: kind === 'weights' ? 'unit' : 'diverging',
    decimals: dec,
    rowAxis: c.axisQuery,
    colAxis: c.axisKey,
    label: name,
    cellLabel: (i, j, value) => `${name}: ${fill(c.cellLabel, { row: c.axisQuery, i, col: c.axisKey, j, value })}`,
    maskedText: c.maskedCell,
    legendTitle: kind === 'weights' ? c.legendWeight : kind === 'scores' ? c.legendScore : c.legendDiff,
  };
}

/** Figure 2.1: every scoring function of the registry side by side. */
export function sideBySide(ctx: Ctx, store: Store<Ch2Spec>): HTMLElement {
  const t = ctx.t.fig1;
  const c = ctx.cat.common;
  let outcomes: Outcome[] = [];

  const controls = controlGroup(c.controls,
    radios(store, 'view', { id: 'c2-view', label: t.view, options: [['weights', t.viewWeights], ['scores', t.viewScores]] }),
    slider(store, 'alpha', { id: 'c2-alpha', label: t.alpha, min: 0, max: 1, step: 0.01, format: (v) => fixed(v, 2), hint: t.alphaHint }),
    slider(store, 'dh', { id: 'c2-dh', label: t.dh, min: 1, max: 16, step: 1, hint: t.dhHint }),
    integer(store, 'seed', { id: 'c2-seed', label: c.seed, min: 0, max: 999_999, hint: t.seedHint }),
  );

  // Shared inputs: editable grids (shape kept) and a paste box (any shape up to 8 x 8).
  const editor = (m: 'q' | 'k' | 'v', symbol: string, title: string) =>
    new MatrixEditor({
      symbol,
      title,
      testId: `c2-matrix-${m}`,
      cellLabel: (i, j) => fill(t.cellAria, { m: symbol, i, j }),
      invalidText: t.invalidNumber,
      onChange: (value) => store.set({ [m]: value }),
    });
  const editors = { q: editor('q', 'Q', t.matrixQ), k: editor('k', 'K', t.matrixK), v: editor('v', 'V', t.matrixV) };
  const paste = new PasteBox(c.paste, {
    id: 'c2-paste',
    limits: MATRIX_LIMITS,
    current: () => ({ q: store.get().q, k: store.get().k, v: store.get().v }),
    apply: ({ q, k, v }) => store.set({ q, k, v }),
  });
  const inputs = h('details', { className: 'c2-inputs' },
    h('summary', { textContent: t.inputs }),
    h('p', { className: 'hint', textContent: t.inputsHint }),
    h('div', { className: 'editors' }, editors.q.el, editors.k.el, editors.v.el),
    paste.el);
  inputs.dataset.testid = 'c2-inputs';

  // One panel per scoring function, in registry order; hovering a cell outlines it everywhere.
  const panels = ctx.qk.scoreFunctions.map((info) => {
    const hm = new Heatmap(`c2-hm-${info.name}`);
    const note = h('p', { className: 'hint c2-note' });
    const formula = h('div', { className: 'c2-formula' });
    formula.innerHTML = tex(`\\displaystyle ${info.tex}`);
    const el = testId(h('div', { className: 'panel c2-panel' }, h('h3', { textContent: label(ctx, info.name) }), formula, hm.el, note), `c2-panel-${info.name}`);
    return { name: info.name, hm, note, el };
  });
  for (const p of panels) p.hm.onCellFocus = (cell) => panels.forEach((o) => o !== p && o.hm.highlight(cell));
  const grid = h('div', { className: 'panels c2-grid' }, ...panels.map((p) => p.el));

  // A parameter of one function alone (alpha: bilinear, d_h: additive) recomputes and redraws
  // that function's panel; the others keep their results (the same call would give the same).
  const ONLY: Partial<Record<string, ScoreName>> = { alpha: 'bilinear', dh: 'additive' };
  const draw = (changed?: ReadonlySet<string>) => {
    const s = store.get();
    const only = changed && changed.size > 0 && [...changed].every((k) => ONLY[k]) ? new Set([...changed].map((k) => ONLY[k]!)) : null;
    for (const m of ['q', 'k', 'v'] as const) if (!changed || changed.has(m)) editors[m].set(s[m]);
    if (only) {
      const next = runAll(ctx.qk, s, (name) => only.has(name));
      outcomes = outcomes.map((o) => next.find((x) => x.name === o.name) ?? o);
    } else outcomes = runAll(ctx.qk, s);
    for (const p of panels) {
      if (only && !only.has(p.name)) continue;
      const o = outcomes.find((x) => x.name === p.name)!;
      if (!o.result) {
        p.hm.el.hidden = true;
        setLabel(p.note, o.info.sameDim && s.q[0]!.length !== s.k[0]!.length ? t.needsSameDim : fill(c.cannotCompute, { message: coreMessage(ctx.lang, o.error) }));
        p.note.classList.add('c2-error');
        continue;
      }
      p.hm.el.hidden = false;
      p.note.classList.remove('c2-error');
      const m = s.view === 'weights' ? o.result.weights : o.result.scores;
      p.hm.update(spec(ctx, m, s.view, label(ctx, p.name)));
      setText(p.note, fill(t.meanEntropy, { h: fixed(meanEntropy(o.result), 3), max: fixed(Math.log(o.result.weights.cols), 3) }));
    }
  };

  const frame = new FigureFrame(ctx.cat, {
    id: 'figure-c2-grid',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['view', 'alpha', 'dh', 'seed', 'q', 'k', 'v']),
    charts: () => panels.filter((p) => !p.hm.el.hidden).map((p) => ({ title: label(ctx, p.name), parts: p.hm.parts() })),
    data: () => {
      const s = store.get();
      const ok = outcomes.filter((o) => o.result);
      const table = matricesTable(ok.map((o) => [`${o.name}.${s.view}`, s.view === 'weights' ? o.result!.weights : o.result!.scores]), 'query', 'key');
      return { ...table, json: { inputs: { Q: s.q, K: s.k, V: s.v, alpha: s.alpha, hidden: s.dh, seed: s.seed }, view: s.view, matrices: table.json } };
    },
  });
  frame.body.append(controls, inputs, grid);
  store.on((_, changed) => {
    if (['view', 'alpha', 'dh', 'seed', 'q', 'k', 'v'].some((k) => changed.has(k as keyof typeof _))) draw(changed as ReadonlySet<string>);
  });
  draw();
  return frame.el;
}

/** Figure 2.2: weights of A minus weights of B. */
export function differenceView(ctx: Ctx, store: Store<Ch2Spec>): HTMLElement {
  const t = ctx.t.fig2;
  const c = ctx.cat.common;
  const options = ctx.qk.scoreFunctions.map((f) => [f.name, label(ctx, f.name)] as const);
  const controls = controlGroup(c.controls,
    select(store, 'a', { id: 'c2-a', label: t.a, options }),
    select(store, 'b', { id: 'c2-b', label: t.b, options }));
  const hmA = new Heatmap('c2-diff-a');
  const hmB = new Heatmap('c2-diff-b');
  const hmD = new Heatmap('c2-diff');
  const titles = [h('h3'), h('h3'), h('h3')];
  const summary = testId(h('p', { className: 'figure-summary' }), 'c2-diff-summary');
  summary.setAttribute('aria-live', 'polite');
  const row = h('div', { className: 'c2-row' }, ...[hmA, hmB, hmD].map((hm, k) => h('div', { className: 'panel c2-panel' }, titles[k]!, hm.el)));
  const all = [hmA, hmB, hmD];
  for (const hm of all) hm.onCellFocus = (cell) => all.forEach((o) => o !== hm && o.highlight(cell));
  let last: { a: Matrix; b: Matrix; d: Matrix } | null = null;

  const draw = () => {
    const s = store.get();
    const la = label(ctx, s.a);
    const lb = label(ctx, s.b);
    titles[0]!.textContent = fill(t.weightsOf, { name: la });
    titles[1]!.textContent = fill(t.weightsOf, { name: lb });
    titles[2]!.textContent = fill(t.diffTitle, { a: la, b: lb });
    let a: Matrix;
    let b: Matrix;
    try {
      a = ctx.qk.forward(optionsFor(s.a as ScoreName, s)).weights;
      b = ctx.qk.forward(optionsFor(s.b as ScoreName, s)).weights;
    } catch (e) {
      row.hidden = true;
      last = null;
      summary.textContent = fill(c.cannotCompute, { message: coreMessage(ctx.lang, e) });
      return;
    }
    row.hidden = false;
    const d = difference(a, b);
    last = { a, b, d };
    hmA.update(spec(ctx, a, 'weights', titles[0]!.textContent));
    hmB.update(spec(ctx, b, 'weights', titles[1]!.textContent));
    hmD.update({ ...spec(ctx, d, 'diff', titles[2]!.textContent), decimals: 3 });
    const st = diffStats(a, b);
    summary.textContent = st.max < 5e-7
      ? fill(t.summaryZero, { max: st.max.toExponential(1) })
      : fill(t.summary, { max: fixed(st.max, 4), i: st.i + 1, j: st.j + 1, rows: st.rowsChanged, total: a.rows });
  };

  const frame = new FigureFrame(ctx.cat, {
    id: 'figure-c2-diff',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['a', 'b']),
    charts: () => (last ? [hmA, hmB, hmD].map((hm, k) => ({ title: titles[k]!.textContent ?? '', parts: hm.parts() })) : []),
    data: () => {
      const s = store.get();
      return last ? matricesTable([[`${s.a}.weights`, last.a], [`${s.b}.weights`, last.b], ['difference', last.d]], 'query', 'key') : { columns: [], rows: [] };
    },
  });
  frame.body.append(controls, summary, row);
  // alpha and d_h enter one function each, the view none of A and B: other changes redraw.
  store.on((v, changed) => {
    const uses = (name: string) => v.a === name || v.b === name;
    if ([...changed].some((k) => (k === 'alpha' ? uses('bilinear') : k === 'dh' ? uses('additive') : k !== 'view'))) draw();
  });
  draw();
  return frame.el;
}
