/**
 * Figure 1: scores, weights and output of attention on editable Q, K, V, live from the core.
 * Controls: scoring function (from the core's registry), temperature (log scale),
 * causal mask, key length (padding), parameter seed, sizes; heatmaps of maskedScores,
 * weights and output; per-row entropy and max weight. Errors from forward() are shown
 * inline (role=alert) and the last valid result stays on screen, dimmed. State: one Store
 * (model.ts's field table), bound to the URL like every other chapter's.
 */
import type { ForwardResult, QkScope, ScoreInfo } from '@qkscope/wasm';
import { type Catalog, fill } from '../../i18n';
import { coreMessage } from '../../i18n/core-errors';
import { labelNodes } from '../../charts/label';
import { Heatmap } from '../../charts/heatmap';
import { matricesTable } from '../../charts/export';
import { MatrixEditor } from '../../widget/matrix-editor';
import { argmax, maskedCells, row } from '../../model/matrix';
import { cellDecimals, fitDecimals, fixed, trimmed } from '../../model/format';
import { MATRIX_LIMITS } from '../../model/url-state';
import type { Store } from '../shared/store';
import { inline, tex } from '../shared/rich';
import { h, testId } from '../shared/dom';
import { FigureFrame } from '../shared/figure';
import { PasteBox } from '../shared/paste';
import { checkbox, controlGroup, integer, select, slider } from '../shared/controls';
import { type Ch1Spec, SEED, SIZE_KEYS, TAU, figureOptions, withSizes } from './model';
import type { Ch1Text } from './en';

export class ScoreFigure {
  readonly el: HTMLElement;
  private readonly infos: readonly ScoreInfo[];
  private readonly formula = testId(h('div', { className: 'formula' }), 'formula');
  private readonly scaleText = h('p', { className: 'hint' });
  private readonly seedBox: HTMLElement;
  private readonly seedHint = h('p', { className: 'hint' });
  private readonly sizes = new Map<string, HTMLSelectElement>();
  private readonly editors: Record<'q' | 'k' | 'v', MatrixEditor>;
  private readonly alert = testId(h('div', { className: 'alert', role: 'alert' }), 'forward-error');
  private readonly charts = h('div', { className: 'charts' });
  private readonly scores = new Heatmap('heatmap-scores');
  private readonly weights = new Heatmap('heatmap-weights');
  private readonly output = new Heatmap('output-matrix');
  private readonly stats = testId(h('table', { className: 'row-stats' }), 'row-stats');
  private readonly statsBox = h('div', { className: 'stats' });
  private last: ForwardResult | null = null;
  private readonly t: Ch1Text['figure'];
  /** True once a result has been drawn (charts hidden until then). */
  private drawn = false;

  constructor(
    private readonly qk: QkScope,
    private readonly cat: Catalog,
    text: Ch1Text['figure'],
    private readonly store: Store<Ch1Spec>,
  ) {
    const t = text;
    this.t = text;
    this.infos = qk.scoreFunctions;

    // Scoring functions: straight from the core's registry, labels translated when known.
    const options = this.infos.map((info) => [info.name, cat.scoreLabels[info.name] ?? info.label] as const);
    const scoreBox = select(store, 'score', { id: 'fig1-score', testid: 'score-select', label: t.score, options });
    scoreBox.append(this.scaleText);
    const tau = slider(store, 'tau', {
      id: 'fig1-tau', testid: 'temperature', label: t.temperature, hint: t.temperatureHint,
      min: TAU.min, max: TAU.max, step: 0.01, scale: 'log', format: (v) => `= ${fixed(v, v >= 10 ? 1 : 2)}`,
    });
    const klen = slider(store, 'klen', {
      id: 'fig1-klen', testid: 'key-length', label: t.keyLength, min: 1, max: () => store.get().lk, step: 1,
      format: (n) => fill(t.keyLengthValue, { n, total: store.get().lk }),
    });
    const klenInput = klen.querySelector('input')!;
    klen.append(checkbox(store, 'causal', { id: 'fig1-causal', testid: 'causal', label: t.causal, hint: t.causalHint }));
    this.seedBox = integer(store, 'seed', { id: 'fig1-seed', testid: 'seed', label: t.seed, min: SEED.min, max: SEED.max });
    this.seedBox.append(this.seedHint);
    const controls = controlGroup(t.controls, tau, klen, this.seedBox);
    const head = h('div', { className: 'control-score' }, scoreBox, this.formula);

    // Inputs: sizes and the three matrix editors.
    const sizeRow = h('div', { className: 'sizes', role: 'group' });
    sizeRow.setAttribute('aria-label', t.sizes);
    for (const key of SIZE_KEYS) {
      const range = key === 'lq' || key === 'lk' ? MATRIX_LIMITS.len : MATRIX_LIMITS.dim;
      const sel = testId(h('select', { id: `fig1-${key}` }), `size-${key}`);
      for (let n = range.min; n <= range.max; n++) sel.append(h('option', { value: String(n), textContent: String(n) }));
      sel.addEventListener('change', () => store.set(withSizes(store.get(), { [key]: Number(sel.value) })));
      this.sizes.set(key, sel);
      // Plain text with a real subscript (not KaTeX, whose visible part is hidden from
      // assistive technology): the label then names the select ("dq").
      sizeRow.append(h('label', { className: 'size', htmlFor: sel.id }, h('span', { className: 'size-name' }, ...labelNodes(t[key].replace(/\$/g, ''))), sel));
    }
    const editor = (m: 'q' | 'k' | 'v', symbol: string, title: string) =>
      new MatrixEditor({
        symbol,
        title,
        testId: `matrix-${m}`,
        cellLabel: (i, j) => fill(t.cellAria, { m: symbol, i, j }),
        invalidText: t.invalidNumber,
        onChange: (value) => store.set({ [m]: value }),
      });
    this.editors = { q: editor('q', 'Q', t.matrixQ), k: editor('k', 'K', t.matrixK), v: editor('v', 'V', t.matrixV) };
    const inputs = h('div', { className: 'inputs' },
      h('h3', { textContent: t.inputs }),
      h('p', { className: 'hint', textContent: t.inputsHint }),
      sizeRow,
      h('div', { className: 'editors' }, this.editors.q.el, this.editors.k.el, this.editors.v.el));

    // Charts.
    const panel = (hm: Heatmap, title: string, note: string) =>
      h('div', { className: 'chart' }, h('h3', { textContent: title }), h('p', { className: 'hint chart-note', textContent: note }), hm.el);
    this.charts.append(
      panel(this.scores, t.scoresTitle, t.scoresNote),
      panel(this.weights, t.weightsTitle, t.weightsNote),
      panel(this.output, t.outputTitle, t.outputNote),
    );
    this.statsBox.append(
      h('h3', { textContent: t.statsTitle }),
      h('p', { className: 'hint', innerHTML: inline(t.statsHint) }),
      h('div', { className: 'table-scroll' }, this.stats));
    this.charts.hidden = true;
    this.statsBox.hidden = true;

    // Bring your own Q/K/V: sizes follow the pasted matrices, and every key is valid.
    const paste = new PasteBox(cat.common.paste, {
      id: 'fig1-paste',
      limits: MATRIX_LIMITS,
      current: () => ({ q: store.get().q, k: store.get().k, v: store.get().v }),
      apply: ({ q, k, v }) =>
        store.set({ lq: q.length, lk: k.length, dq: q[0]!.length, dk: k[0]!.length, dv: v[0]!.length, klen: MATRIX_LIMITS.len.max, q, k, v }),
    });
    inputs.append(paste.el);

    this.alert.hidden = true;
    const frame = new FigureFrame(cat, {
      id: 'figure-1',
      title: t.title,
      caption: t.caption,
      onReset: () => {
        store.reset();
        scoreBox.querySelector('select')!.focus();
      },
      charts: () => [
        { title: t.scoresTitle, parts: this.scores.parts() },
        { title: t.weightsTitle, parts: this.weights.parts() },
        { title: t.outputTitle, parts: this.output.parts() },
      ],
      data: () => {
        const r = this.last;
        const s = store.get();
        const table = r ? matricesTable([['scores', r.maskedScores], ['weights', r.weights], ['output', r.output]]) : { columns: [], rows: [] };
        return { ...table, json: { state: { score: s.score, tau: s.tau, causal: s.causal, keyLength: s.klen, seed: s.seed, Q: s.q, K: s.k, V: s.v }, ...(table.json as object) } };
      },
    });
    frame.body.append(head, controls, inputs, this.alert, this.charts, this.statsBox);
    this.el = frame.el;
    store.on((_, changed) => {
      klenInput.disabled = store.get().lk === 1;
      this.render(changed);
    });
    klenInput.disabled = store.get().lk === 1;
    this.render();
  }

  /** Redraws what depends on the changed fields (all of it without `changed`). */
  private render(changed?: ReadonlySet<keyof Ch1Spec>): void {
    const s = this.store.get();
    const t = this.t;
    const info = this.infos.find((f) => f.name === s.score);
    const any = (...keys: (keyof Ch1Spec)[]) => !changed || keys.some((k) => changed.has(k));
    // KaTeX and the editors are the slow part of a redraw: only when their inputs changed.
    if (any('score')) {
      this.formula.innerHTML = info ? tex(info.tex, true) : '';
      const params = info?.params ?? [];
      this.seedBox.hidden = params.length === 0;
      this.seedHint.innerHTML = inline(fill(t.seedHint, { params: params.map((p) => `$${p}$`).join(', ') }));
    }
    if (any(...SIZE_KEYS, 'q', 'k', 'v')) {
      for (const key of SIZE_KEYS) this.sizes.get(key)!.value = String(s[key]);
      this.editors.q.set(s.q);
      this.editors.k.set(s.k);
      this.editors.v.set(s.v);
    }

    let result: ForwardResult;
    try {
      result = this.qk.forward(figureOptions(s));
    } catch (e) {
      const message = coreMessage(this.cat.lang, e);
      this.alert.replaceChildren(h('strong', { textContent: t.errorTitle }), ' ', h('span', { className: 'alert-message', textContent: message }));
      // A hint built from the registry: which scoring functions accept different widths.
      if (info?.sameDim && s.dq !== s.dk) {
        const names = this.infos.filter((f) => !f.sameDim).map((f) => this.cat.scoreLabels[f.name] ?? f.label);
        if (names.length) this.alert.append(h('p', { innerHTML: inline(fill(t.errorSameDim, { names: names.join(this.cat.lang === 'zh' ? '、' : ', ') })) }));
      }
      if (this.drawn) this.alert.append(h('p', { textContent: t.errorStale }));
      this.alert.hidden = false;
      this.charts.classList.add('stale');
      this.statsBox.classList.add('stale');
      this.scaleText.textContent = '';
      return;
    }
    if (!this.alert.hidden) {  // no mutation at all on the usual, valid input
      this.alert.hidden = true;
      this.alert.replaceChildren();
    }
    this.charts.classList.remove('stale');
    this.statsBox.classList.remove('stale');
    this.charts.hidden = false;
    this.statsBox.hidden = false;
    this.drawn = true;
    this.last = result;
    this.scaleText.textContent = `${t.scaleUsed}: ${trimmed(result.scale, 4)} · τ = ${fixed(s.tau, 2)}`;
    this.draw(result);
  }

  private draw(r: ForwardResult): void {
    const t = this.t;
    const masked = maskedCells(r.maskedScores);
    const label = (rowAxis: string, colAxis: string) => (i: number, j: number, value: string) =>
      fill(t.cellLabel, { row: rowAxis, i, col: colAxis, j, value });
    const dec = cellDecimals(r.weights.cols);
    this.scores.update({
      values: r.maskedScores, masked, palette: 'diverging', decimals: fitDecimals(r.maskedScores.data, dec),
      rowAxis: t.axisQuery, colAxis: t.axisKey, label: t.scoresTitle,
      cellLabel: label(t.axisQuery, t.axisKey), maskedText: t.maskedCell,
      legendTitle: t.legendScore, maskedLegend: t.maskedLegend,
    });
    this.weights.update({
      values: r.weights, masked, palette: 'unit', decimals: dec,
      rowAxis: t.axisQuery, colAxis: t.axisKey, label: t.weightsTitle,
      cellLabel: label(t.axisQuery, t.axisKey), maskedText: t.maskedCell,
      legendTitle: t.legendWeight, maskedLegend: t.maskedLegend,
    });
    this.output.update({
      values: r.output, palette: 'diverging', decimals: fitDecimals(r.output.data, cellDecimals(r.output.cols)),
      rowAxis: t.axisQuery, colAxis: t.axisDim, label: t.outputTitle,
      cellLabel: label(t.axisQuery, t.axisDim), maskedText: t.maskedCell,
      legendTitle: t.legendValue,
    });
    this.drawStats(r);
    // Each chart may shrink to 80% of its natural size before the row wraps.
    const natural = [Heatmap.naturalWidth(r.weights.cols), Heatmap.naturalWidth(r.weights.cols), Heatmap.naturalWidth(r.output.cols)];
    [...this.charts.children].forEach((c, k) => {
      const el = c as HTMLElement;
      el.style.flexBasis = `${Math.round(natural[k]! * 0.8)}px`;
      el.style.maxWidth = `max(${natural[k]}px, 16rem)`;
    });
  }

  private drawStats(r: ForwardResult): void {
    const t = this.t;
    // Same rows as last time: only the numbers change (a slider drag), no new nodes.
    const rows = [...this.stats.tBodies[0]?.rows ?? []];
    const shape = (i: number) => (r.logsumexp[i] === -Infinity ? 1 : 3);
    if (rows.length === r.weights.rows && rows.every((tr, i) => tr.cells.length - 1 === shape(i))) {
      rows.forEach((tr, i) => {
        if (shape(i) === 1) return;
        const texts = [fixed(r.maxWeight[i]!, 4), String(argmax(row(r.weights, i)) + 1), fixed(r.entropy[i]!, 4)];
        texts.forEach((x, k) => {
          const td = tr.cells[k + 1]!;
          if (td.textContent !== x) td.textContent = x;
        });
      });
      return;
    }
    const head = h('tr', {}, ...[t.statsQuery, t.statsMax, t.statsArgmax, t.statsEntropy].map((x) => h('th', { scope: 'col', textContent: x })));
    const body = h('tbody');
    for (let i = 0; i < r.weights.rows; i++) {
      const empty = r.logsumexp[i] === -Infinity;
      const tr = h('tr');
      tr.dataset.row = String(i);
      tr.append(h('th', { scope: 'row', textContent: String(i + 1) }));
      if (empty) tr.append(h('td', { colSpan: 3, textContent: t.statsEmpty }));
      else
        tr.append(
          h('td', { textContent: fixed(r.maxWeight[i]!, 4) }),
          h('td', { textContent: String(argmax(row(r.weights, i)) + 1) }),
          h('td', { textContent: fixed(r.entropy[i]!, 4) }),
        );
      body.append(tr);
    }
    this.stats.replaceChildren(h('thead', {}, head), body);
  }
}
