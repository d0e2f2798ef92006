/**
 * <qk-scope>: live attention weights softmax(f(Q, K) / tau) V of the C++ core, as a
 * custom element for any page. Attributes are the source of truth (see config.ts and
 * web/widget.html); controls write attributes, attribute changes recompute. Shadow DOM
 * with part= hooks and --qk-* colour properties; every recompute dispatches a typed
 * `attention-change` event (bubbles, composed). Defining it is define.ts's job.
 * Pattern: github/relative-time-element.
 */
import type { ForwardResult, QkScope } from '@qkscope/wasm';
import { maskedCells, toRows } from '../model/matrix';
import { cellDecimals, fitDecimals } from '../model/format';
import {
  ATTRIBUTES, CONTROLS, MASKS, VIEWS, TAU_MAX, TAU_MIN,
  type AttributeName, type ControlName, type WidgetConfig, forwardOptions, parseConfig, registryOf,
} from './config';
import { loadCore } from './core';
import { renderGrid } from './grid';
import { STRINGS, type WidgetStrings } from './strings';
import { adoptStyles } from './styles';

/** detail of `attention-change`: the state used and a summary of the result. */
export interface AttentionChangeDetail {
  config: WidgetConfig;
  /** Attention weights, (lq, lk). */
  weights: number[][];
  /** weights x V, (lq, d). */
  output: number[][];
  /** Index of the largest weight per query row, (lq). */
  argmax: number[];
  /** Row entropy in nats, (lq). */
  entropy: number[];
  scale: number;
  /** Messages about attributes that were rejected (and the fallbacks used). */
  problems: string[];
}

export type AttentionChangeEvent = CustomEvent<AttentionChangeDetail>;

declare global {
  interface HTMLElementEventMap {
    'attention-change': AttentionChangeEvent;
  }
  // It bubbles and is composed, so listeners on the document see it too.
  interface DocumentEventMap {
    'attention-change': AttentionChangeEvent;
  }
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, part: string, cls = part): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (part) e.setAttribute('part', part);
  if (cls) e.className = cls;
  return e;
}

export class QkScopeElement extends HTMLElement {
  static get observedAttributes(): readonly string[] {
    return ATTRIBUTES;
  }

  private readonly root: ShadowRoot;
  private readonly controlsBox = el('div', 'controls');
  private readonly figure = el('div', 'figure');
  private readonly summary = el('p', 'summary');
  private readonly status = el('div', 'error');
  private readonly alert = el('div', 'alert');
  private readonly inputs = new Map<ControlName, HTMLSelectElement | HTMLInputElement>();
  /** The temperature slider (log scale), beside the temperature's number box. */
  private slider: HTMLInputElement | null = null;
  private core: QkScope | null = null;
  private pending = false;
  private builtLang = '';

  constructor() {
    super();
    this.root = this.attachShadow({ mode: 'open' });
    adoptStyles(this.root);
    this.status.setAttribute('role', 'status');
    this.status.setAttribute('aria-live', 'polite');
    this.alert.setAttribute('role', 'alert');
    this.alert.hidden = true;
    const wrap = el('div', 'root');
    wrap.append(this.controlsBox, this.figure, this.summary, this.status, this.alert);
    this.root.append(wrap);
  }

  connectedCallback(): void {
    this.schedule();
  }

  attributeChangedCallback(_name: string, old: string | null, value: string | null): void {
    if (old !== value) this.schedule();
  }

  /**
   * The validated configuration the attributes currently describe (score and normalizer
   * names are checked against the core's registries once the core has loaded).
   */
  get config(): WidgetConfig {
    return parseConfig((n) => this.getAttribute(n), this.core && registryOf(this.core)).config;
  }

  /** Recomputes once per task, however many attributes changed. */
  private schedule(): void {
    if (this.pending) return;
    this.pending = true;
    queueMicrotask(() => {
      this.pending = false;
      if (this.isConnected) void this.update();
    });
  }

  private async update(): Promise<void> {
    const { config, problems } = parseConfig((n) => this.getAttribute(n), this.core && registryOf(this.core));
    const t = STRINGS[config.lang];
    const messages = problems.map((p) => t.problem(p));
    this.showList(this.status, messages);
    if (!this.core) {
      this.figure.replaceChildren(Object.assign(el('p', 'status'), { textContent: t.loading }));
      try {
        this.core = await loadCore();
      } catch (e) {
        this.fail(t.loadFailed, e);
        return;
      }
      // Attributes may have changed while loading: start over with the current ones.
      return this.update();
    }
    this.buildControls(config, t);
    let result: ForwardResult;
    try {
      result = this.core.forward(forwardOptions(config));
      this.alert.hidden = true;
      this.alert.replaceChildren();
    } catch (e) {
      this.fail(t.computeFailed, e);
      return;
    }
    this.draw(config, t, result);
    const weights = toRows(result.weights);
    const detail: AttentionChangeDetail = {
      config,
      weights,
      output: toRows(result.output),
      argmax: weights.map((r) => r.indexOf(Math.max(...r))),
      entropy: Array.from(result.entropy),
      scale: result.scale,
      problems: messages,
    };
    this.dispatchEvent(new CustomEvent('attention-change', { detail, bubbles: true, composed: true }));
  }

  private fail(prefix: string, e: unknown): void {
    this.figure.replaceChildren();
    this.alert.hidden = false;
    this.showList(this.alert, [prefix + (e instanceof Error ? e.message : String(e))]);
  }

  private showList(box: HTMLElement, lines: string[]): void {
    box.replaceChildren(...lines.map((m) => Object.assign(document.createElement('p'), { textContent: m })));
    if (box === this.status) box.classList.toggle('error', lines.length > 0);
  }

  /** Builds the controls once per language; afterwards only syncs values and visibility. */
  private buildControls(c: WidgetConfig, t: WidgetStrings): void {
    if (this.builtLang !== c.lang) {
      this.builtLang = c.lang;
      this.inputs.clear();
      this.slider = null;
      this.controlsBox.replaceChildren();
      const labels: Record<ControlName, string> = {
        score: t.score, temperature: t.temperature, mask: t.mask, normalizer: t.normalizer, view: t.view, seed: t.seed,
      };
      // Score and normalizer options: the core's registries, in their order, with their labels.
      const core = this.core!;
      const options: Partial<Record<ControlName, [string, string][]>> = {
        score: core.scoreFunctions.map((f) => [f.name, t.scoreLabel(f.name, f.label)]),
        mask: MASKS.map((m) => [m, t.masks[m]]),
        normalizer: core.normalizers.map((n) => [n.name, t.normalizerLabel(n.name, n.label)]),
        view: VIEWS.map((v) => [v, t.views[v]]),
      };
      for (const name of CONTROLS) {
        const label = el('label', `control control-${name}`, 'control');
        label.append(labels[name]);
        let input: HTMLSelectElement | HTMLInputElement;
        const opts = options[name];
        if (opts) {
          input = document.createElement('select');
          for (const [value, text] of opts) input.append(new Option(text, value));
        } else {
          input = document.createElement('input');
          input.type = 'number';
          input.min = name === 'seed' ? '0' : '0.05';
          input.step = name === 'seed' ? '1' : '0.1';
        }
        input.setAttribute('part', name === 'temperature' || name === 'seed' ? 'input' : 'select');
        input.dataset.control = name;
        input.addEventListener('change', () => this.onControl(name, input));
        if (name === 'temperature') {
          // The label names the slider; the number box beside it has its own name.
          input.setAttribute('aria-label', t.temperatureValue);
          label.append(this.temperatureSlider());
        }
        label.append(input);
        this.inputs.set(name, input);
        this.controlsBox.append(label);
      }
    }
    const values: Record<ControlName, string> = {
      score: c.score, temperature: String(c.temperature), mask: c.mask, normalizer: c.normalizer, view: c.view, seed: String(c.seed),
    };
    for (const [name, input] of this.inputs) {
      input.parentElement!.hidden = !c.controls.includes(name);
      if (this.root.activeElement !== input) input.value = values[name];
    }
    if (this.slider && this.root.activeElement !== this.slider) this.slider.value = String(Math.log10(c.temperature));
    this.slider?.setAttribute('aria-valuetext', `τ = ${c.temperature}`);
    this.controlsBox.hidden = c.controls.length === 0;
  }

  /** A slider over log10(τ) from about 0.05 to 20 that writes the temperature (3 significant digits) while it moves. */
  private temperatureSlider(): HTMLInputElement {
    const r = document.createElement('input');
    r.type = 'range';
    // Ends on the step grid (±1.3), so that the values are multiples of the step and 0 (τ = 1) is one.
    r.step = '0.01';
    r.min = Math.log10(TAU_MIN).toFixed(2);
    r.max = Math.log10(TAU_MAX).toFixed(2);
    r.setAttribute('part', 'slider');
    r.dataset.control = 'temperature-slider';
    r.addEventListener('input', () => this.setAttribute('temperature', String(Number((10 ** Number(r.value)).toPrecision(3)))));
    this.slider = r;
    return r;
  }

  /** A control writes its attribute; attributeChangedCallback recomputes. */
  private onControl(name: ControlName, input: HTMLSelectElement | HTMLInputElement): void {
    const attr: AttributeName = name;
    this.setAttribute(attr, input.value);
  }

  private draw(c: WidgetConfig, t: WidgetStrings, r: ForwardResult): void {
    const masked = maskedCells(r.maskedScores);
    const grid = (name: string, title: string, values: ForwardResult['weights'], palette: 'unit' | 'diverging', withMask: boolean, colName = t.key) =>
      renderGrid({
        name, title, values, palette,
        // As many decimals as fit a cell (at most 4), unless `digits` says how many.
        decimals: c.digits ?? fitDecimals(values.data, cellDecimals(values.cols), 6),
        masked: withMask ? masked : undefined,
        maskedText: t.masked,
        cellLabel: (i, j, v) => t.cell(`${title} (${t.query} ${i}, ${colName} ${j})`, i, j, v),
        gridLabel: t.grid(title, values.rows, values.cols),
        rowAxis: t.query,
        colAxis: colName,
        legendTitle: palette === 'unit' ? t.legend.weight : name === 'output' ? t.legend.value : t.legend.score,
      });
    const norm = this.core!.normalizers.find((n) => n.name === c.normalizer);
    const normLabel = norm ? t.normalizerLabel(norm.name, norm.label) : c.normalizer;
    const figs: HTMLElement[] = [];
    if (c.view === 'heatmap') {
      figs.push(grid('weights', t.label, r.weights, 'unit', true));
    } else if (c.view === 'steps') {
      figs.push(
        grid('raw', t.steps.raw, r.rawScores, 'diverging', false),
        grid('scores', t.steps.scores, r.maskedScores, 'diverging', true),
        grid('weights', t.steps.weights(normLabel), r.weights, 'unit', true),
        grid('output', t.steps.output, r.output, 'diverging', false, t.dim),
      );
    } else {
      // Every function of the core's registry; one that cannot run on these inputs says why.
      for (const { name: s, label: coreLabel } of this.core!.scoreFunctions) {
        const label = t.scoreLabel(s, coreLabel);
        let res: ForwardResult;
        try {
          res = s === c.score ? r : this.core!.forward(forwardOptions(c, s));
        } catch (e) {
          figs.push(Object.assign(el('p', 'status'), { textContent: `${label}: ${t.computeFailed}${e instanceof Error ? e.message : String(e)}` }));
          continue;
        }
        const fig = grid(s === c.score ? 'weights' : `weights-${s}`, label, res.weights, 'unit', true);
        fig.dataset.score = s;
        figs.push(fig);
      }
    }
    this.figure.replaceChildren(...figs);
    this.figure.setAttribute('aria-label', t.label);
    const w = toRows(r.weights);
    const top = w[0] ? w[0].indexOf(Math.max(...w[0])) + 1 : 0;
    this.summary.textContent = c.lang === 'zh'
      ? `查询 1 最关注键 ${top}（权重 ${w[0]?.[top - 1]?.toFixed(4) ?? '—'}）。`
      : `Query 1 attends most to key ${top} (weight ${w[0]?.[top - 1]?.toFixed(4) ?? '—'}).`;
  }
}
