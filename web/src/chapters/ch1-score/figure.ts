/**
 * Figure 1: scores, weights and output of attention on editable Q, K, V, live from the core.
 * Controls: scoring function (from the core's registry), temperature (log scale),
 * causal mask, key length (padding), parameter seed, sizes; heatmaps of maskedScores,
 * weights and output; per-row entropy and max weight. Errors from forward() are shown
 * inline (role=alert) and the last valid result stays on screen, dimmed.
 */
import type { ForwardResult, QkScope, ScoreInfo } from '../../../../wasm/qkscope.js';
import { type Catalog, fill } from '../../i18n';
import { Heatmap } from '../../charts/heatmap';
import { matricesTable } from '../../charts/export';
import { MatrixEditor } from '../../widget/matrix-editor';
import { figureOptions, isMasked } from '../../model/forward';
import { argmax, row } from '../../model/matrix';
import { cellDecimals, fitDecimals, fixed } from '../../model/format';
import { LIMITS, type StateContext, type ViewState, resetFigure, withSizes } from '../../model/state';
import { inline, tex } from '../shared/rich';
import { h, testId } from '../shared/dom';
import { FigureFrame } from '../shared/figure';
import { PasteBox } from '../shared/paste';
import type { Ch1Text } from './en';

type SizeKey = 'lq' | 'lk' | 'dq' | 'dk' | 'dv';
const SIZE_KEYS: readonly SizeKey[] = ['lq', 'lk', 'dq', 'dk', 'dv'];
const TAU_STEPS = 100; // slider units per decade of tau

export class ScoreFigure {
  readonly el: HTMLElement;
  private state: ViewState;
  private readonly infos: readonly ScoreInfo[];
  private readonly select: HTMLSelectElement;
  private readonly formula = h('div', { className: 'formula' });
  private readonly scaleText = h('p', { className: 'hint' });
  private readonly tau = h('input', { type: 'range', min: String(Math.round(Math.log10(LIMITS.tau.min) * TAU_STEPS)), max: String(Math.round(Math.log10(LIMITS.tau.max) * TAU_STEPS)), step: '1', id: 'fig1-tau' });
  private readonly tauOut = h('output');
  private readonly causal = h('input', { type: 'checkbox', id: 'fig1-causal' });
  private readonly klen = h('input', { type: 'range', min: '1', step: '1', id: 'fig1-klen' });
  private readonly klenOut = h('output');
  private readonly seed = h('input', { type: 'number', min: String(LIMITS.seed.min), max: String(LIMITS.seed.max), step: '1', id: 'fig1-seed', inputMode: 'numeric' });
  private readonly seedBox = h('div', { className: 'control' });
  private readonly seedHint = h('p', { className: 'hint' });
  private readonly sizes = new Map<SizeKey, HTMLSelectElement>();
  private readonly editors: Record<'q' | 'k' | 'v', MatrixEditor>;
  private readonly alert = h('div', { className: 'alert', role: 'alert' });
  private readonly charts = h('div', { className: 'charts' });
  private readonly scores = new Heatmap('heatmap-scores');
  private readonly weights = new Heatmap('heatmap-weights');
  private readonly output = new Heatmap('output-matrix');
  private readonly stats = h('table', { className: 'row-stats' });
  private readonly statsBox = h('div', { className: 'stats' });
  private last: ForwardResult | null = null;
  private readonly t: Ch1Text['figure'];
  /** True once a result has been drawn (charts hidden until then). */
  private drawn = false;

  constructor(
    private readonly qk: QkScope,
    private readonly cat: Catalog,
    text: Ch1Text['figure'],
    private readonly ctx: StateContext,
    state: ViewState,
    private readonly onState: (s: ViewState) => void,
  ) {
    const t = text;
    this.t = text;
    this.state = state;
    this.infos = qk.scoreFunctions;
    testId(this.alert, 'forward-error');
    testId(this.stats, 'row-stats');
    testId(this.tau, 'temperature');
    testId(this.causal, 'causal');
    testId(this.klen, 'key-length');
    testId(this.seed, 'seed');
    testId(this.formula, 'formula');
    this.tauOut.setAttribute('for', 'fig1-tau');
    this.klenOut.setAttribute('for', 'fig1-klen');

    // Scoring functions: straight from the core's registry, labels translated when known.
    this.select = testId(h('select', { id: 'fig1-score' }), 'score-select');
    for (const info of this.infos) this.select.append(h('option', { value: info.name, textContent: cat.scoreLabels[info.name] ?? info.label }));
    this.select.addEventListener('change', () => this.set({ ...this.state, score: this.select.value }));

    this.tau.setAttribute('aria-describedby', 'fig1-tau-hint');
    this.tau.addEventListener('input', () => {
      const tau = Number((10 ** (Number(this.tau.value) / TAU_STEPS)).toPrecision(3));
      this.set({ ...this.state, tau });
    });
    this.causal.addEventListener('change', () => this.set({ ...this.state, causal: this.causal.checked }));
    this.klen.addEventListener('input', () => this.set({ ...this.state, keyLength: Number(this.klen.value) }));
    this.seed.addEventListener('input', () => {
      const x = Number(this.seed.value);
      if (this.seed.value.trim() !== '' && Number.isInteger(x) && x >= LIMITS.seed.min && x <= LIMITS.seed.max) this.set({ ...this.state, seed: x });
    });

    const controls = h('div', { className: 'figure-controls', role: 'group' });
    controls.setAttribute('aria-label', t.controls);
    this.seedBox.append(h('label', { htmlFor: 'fig1-seed', textContent: t.seed }), this.seed, this.seedHint);
    const knobs = h('div', { className: 'controls' });
    controls.append(
      h('div', { className: 'control control-score' },
        h('div', {}, h('label', { htmlFor: 'fig1-score', textContent: t.score }), this.select, this.scaleText),
        this.formula),
      knobs,
    );
    knobs.append(
      h('div', { className: 'control' },
        h('label', { htmlFor: 'fig1-tau' }, t.temperature, ' ', this.tauOut), this.tau,
        h('p', { className: 'hint', id: 'fig1-tau-hint', textContent: t.temperatureHint })),
      h('div', { className: 'control' },
        h('label', { htmlFor: 'fig1-klen' }, t.keyLength, ' ', this.klenOut), this.klen,
        h('label', { className: 'check', htmlFor: 'fig1-causal' }, this.causal, ' ', t.causal),
        h('p', { className: 'hint', textContent: t.causalHint })),
      this.seedBox,
    );

    // Inputs: sizes and the three matrix editors.
    const sizeRow = h('div', { className: 'sizes', role: 'group' });
    sizeRow.setAttribute('aria-label', t.sizes);
    for (const key of SIZE_KEYS) {
      const range = key === 'lq' || key === 'lk' ? LIMITS.len : LIMITS.dim;
      const sel = testId(h('select', { id: `fig1-${key}` }), `size-${key}`);
      for (let n = range.min; n <= range.max; n++) sel.append(h('option', { value: String(n), textContent: String(n) }));
      sel.addEventListener('change', () => this.set(withSizes(this.state, { [key]: Number(sel.value) })));
      this.sizes.set(key, sel);
      sizeRow.append(h('label', { className: 'size', htmlFor: sel.id }, h('span', { innerHTML: inline(t[key]) }), sel));
    }
    const editor = (m: 'q' | 'k' | 'v', symbol: string, title: string) =>
      new MatrixEditor({
        symbol,
        title,
        testId: `matrix-${m}`,
        cellLabel: (i, j) => fill(t.cellAria, { m: symbol, i, j }),
        invalidText: t.invalidNumber,
        onChange: (value) => this.set({ ...this.state, [m]: value }),
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

    // Bring your own Q/K/V: sizes follow the pasted matrices.
    const paste = new PasteBox(cat.common.paste, {
      id: 'fig1-paste',
      limits: { len: LIMITS.len, dim: LIMITS.dim, value: LIMITS.value },
      current: () => ({ q: this.state.q, k: this.state.k, v: this.state.v }),
      apply: ({ q, k, v }) => {
        const sized = withSizes(this.state, { lq: q.length, lk: k.length, dq: q[0]!.length, dk: k[0]!.length, dv: v[0]!.length });
        this.set({ ...sized, keyLength: k.length, q, k, v });
      },
    });
    inputs.append(paste.el);

    this.alert.hidden = true;
    const frame = new FigureFrame(cat, {
      id: 'figure-1',
      title: t.title,
      caption: t.caption,
      onReset: () => {
        this.set(resetFigure(this.state, this.ctx));
        this.select.focus();
      },
      charts: () => [
        { title: t.scoresTitle, parts: this.scores.parts() },
        { title: t.weightsTitle, parts: this.weights.parts() },
        { title: t.outputTitle, parts: this.output.parts() },
      ],
      data: () => {
        const r = this.last;
        const table = r ? matricesTable([['scores', r.maskedScores], ['weights', r.weights], ['output', r.output]]) : { columns: [], rows: [] };
        return { ...table, json: { state: { score: this.state.score, tau: this.state.tau, causal: this.state.causal, keyLength: this.state.keyLength, seed: this.state.seed, Q: this.state.q, K: this.state.k, V: this.state.v }, ...(table.json as object) } };
      },
    });
    frame.body.append(controls, inputs, this.alert, this.charts, this.statsBox);
    this.el = frame.el;
    this.render();
  }

  /** Applies a new state (from a control or from outside), reports it, redraws. */
  set(next: ViewState): void {
    this.state = next;
    this.onState(next);
    this.render();
  }

  private info(): ScoreInfo | undefined {
    return this.infos.find((f) => f.name === this.state.score);
  }

  private render(): void {
    const s = this.state;
    const t = this.t;
    const info = this.info();
    this.select.value = s.score;
    this.formula.innerHTML = info ? tex(info.tex, true) : '';
    this.tau.value = String(Math.round(Math.log10(s.tau) * TAU_STEPS));
    this.tauOut.textContent = `= ${fixed(s.tau, s.tau >= 10 ? 1 : 2)}`;
    this.causal.checked = s.causal;
    this.klen.max = String(s.lk);
    this.klen.value = String(s.keyLength);
    this.klenOut.textContent = fill(t.keyLengthValue, { n: s.keyLength, total: s.lk });
    this.klen.disabled = s.lk === 1;
    const params = info?.params ?? [];
    this.seedBox.hidden = params.length === 0;
    if (document.activeElement !== this.seed) this.seed.value = String(s.seed);
    this.seedHint.innerHTML = inline(fill(t.seedHint, { params: params.map((p) => `$${p}$`).join(', ') }));
    for (const key of SIZE_KEYS) this.sizes.get(key)!.value = String(s[key]);
    this.editors.q.set(s.q);
    this.editors.k.set(s.k);
    this.editors.v.set(s.v);

    let result: ForwardResult;
    try {
      result = this.qk.forward(figureOptions(s));
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      this.alert.replaceChildren(h('strong', { textContent: t.errorTitle }), ' ', h('span', { className: 'alert-message', textContent: message }));
      // A hint built from the registry: which scoring functions accept different widths.
      if (info?.sameDim && s.dq !== s.dk) {
        const names = this.infos.filter((f) => !f.sameDim).map((f) => this.cat.scoreLabels[f.name] ?? f.label);
        if (names.length) this.alert.append(h('p', { innerHTML: inline(fill(t.errorSameDim, { names: names.join(', ') })) }));
      }
      if (this.drawn) this.alert.append(h('p', { textContent: t.errorStale }));
      this.alert.hidden = false;
      this.charts.classList.add('stale');
      this.statsBox.classList.add('stale');
      this.scaleText.textContent = '';
      return;
    }
    this.alert.hidden = true;
    this.alert.replaceChildren();
    this.charts.classList.remove('stale');
    this.statsBox.classList.remove('stale');
    this.charts.hidden = false;
    this.statsBox.hidden = false;
    this.drawn = true;
    this.last = result;
    this.scaleText.textContent = `${t.scaleUsed}: ${fixed(result.scale, 4).replace(/0+$/, '').replace(/\.$/, '')} · τ = ${fixed(s.tau, 2)}`;
    this.draw(result);
  }

  private draw(r: ForwardResult): void {
    const t = this.t;
    const masked = (i: number, j: number) => isMasked(r.maskedScores.data[i * r.maskedScores.cols + j]!);
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
