/**
 * Shared machinery of the x–y charts (LineChart, BarChart): an SVG that takes its
 * container's width (ResizeObserver), a legend drawn inside the SVG (so exports carry it),
 * axes with titles, a tooltip, and keyboard navigation over the marks (one tab stop,
 * arrow keys, roving tabindex), each mark with an aria-label.
 * Series colours are the Okabe–Ito palette via CSS variables --series-0..6 (class s-<k>).
 */
import { setAttr, setText } from './attr';
import { select, format as d3format, type Selection } from 'd3';
import { labelParts, setSvgLabel } from './label';
import './xy.css';

export interface AxisSpec {
  /** Plain text with the notation of label.ts (no TeX): e.g. "dₖ", "log L_k", "variance". */
  label: string;
  scale?: 'linear' | 'log';
  /** Fixed ends; null takes that end from the data. */
  domain?: [number | null, number | null];
  ticks?: number[];
  format?: (v: number) => string;
}

export interface LegendItem {
  label: string;
  /** Colour index 0..6. */
  color: number;
  dashed?: boolean;
  kind: 'line' | 'box';
}

/** A focusable mark: where it is, its colour, and what it says. */
export interface Mark {
  x: number;
  y: number;
  /** Series index (up/down arrows) and position in it (left/right arrows). */
  s: number;
  k: number;
  color: number;
  label: string;
  shape: 'circle' | 'rect';
  w?: number;
  h?: number;
}

export const MARGIN = { left: 58, right: 18, top: 10, bottom: 46 };
let uid = 0;

const formatG = d3format('~g');
const formatted = new Map<number, string>();
/**
 * d3's '~g', remembered per value: a dragged slider's chart formats the same ticks and point
 * labels on every input (d3's formatter was ~1 ms per input of chapter 8's g). -0 is not
 * remembered (a Map takes it for 0, d3 writes "−0").
 */
export function defaultFormat(v: number): string {
  if (Object.is(v, -0)) return formatG(v);
  let s = formatted.get(v);
  if (s === undefined) {
    if (formatted.size >= 4096) formatted.clear();
    formatted.set(v, (s = formatG(v)));
  }
  return s;
}

/** Approximate width of a label in px at 12px (CJK glyphs are about one em). */
export function textWidth(s: string): number {
  let w = 0;
  for (const ch of s) w += /[\u2e80-\u9fff\uff00-\uffef]/.test(ch) ? 12.5 : 7;
  return w;
}

export abstract class XYChart<Spec> {
  readonly el: HTMLElement;
  protected readonly id = `xy${++uid}`;
  protected readonly svg: Selection<SVGSVGElement, unknown, null, undefined>;
  protected spec: Spec | null = null;
  protected width = 560;
  private readonly tooltip: HTMLDivElement;
  private marks: Mark[] = [];
  /** Width as last observed (ResizeObserver): an update then never forces a layout. */
  private observed = -1;
  private focus = 0;

  constructor(testId: string, protected readonly maxWidth = 640) {
    this.el = document.createElement('div');
    this.el.className = 'xy-chart';
    this.el.dataset.testid = testId;
    this.svg = select(this.el).append('svg').attr('class', 'xy-svg').attr('role', 'group');
    this.tooltip = document.createElement('div');
    this.tooltip.className = 'tooltip';
    this.tooltip.setAttribute('aria-hidden', 'true');
    this.el.append(this.tooltip);
    this.svg.on('keydown', (ev: KeyboardEvent) => this.onKey(ev));
    this.svg.on('pointerleave', () => this.tooltip.classList.remove('visible'));
    if (typeof ResizeObserver === 'function') {
      new ResizeObserver(() => {
        this.observed = this.el.clientWidth;
        const w = this.measure();
        if (this.spec && Math.abs(w - this.width) > 2) this.redraw();
      }).observe(this.el);
    }
  }

  /** The chart's SVG, for export. */
  parts(): SVGSVGElement[] {
    return [this.svg.node()!];
  }

  update(spec: Spec): void {
    const prev = this.spec;
    this.spec = spec;
    // Same width and a change the chart can apply in place (a moved marker): no rebuild.
    if (prev && this.measure() === this.width && this.patch(prev, spec)) return;
    this.redraw();
  }

  /** Applies `next` in place when it differs from `prev` only in what the chart can move; false to rebuild. */
  protected patch(_prev: Spec, _next: Spec): boolean {
    return false;
  }

  private measure(): number {
    const w = this.observed >= 0 ? this.observed : this.el.clientWidth;
    return Math.max(260, Math.min(this.maxWidth, w > 0 ? w : this.maxWidth));
  }

  private redraw(): void {
    if (!this.spec) return;
    this.width = this.measure();
    this.svg.selectAll('*').remove();
    this.draw(this.spec, this.width);
  }

  /** Draws everything for `spec` at `width`; calls legend(), axes and setMarks(). */
  protected abstract draw(spec: Spec, width: number): void;

  /** Draws the legend at the top and returns its height. */
  protected legend(items: LegendItem[], width: number): number {
    const g = this.svg.append('g').attr('class', 'legend-items').attr('aria-hidden', 'true');
    let x = MARGIN.left;
    let y = 12;
    for (const it of items) {
      const w = 30 + textWidth(it.label) + 16;
      if (x > MARGIN.left && x + w > width - MARGIN.right) {
        x = MARGIN.left;
        y += 20;
      }
      if (it.kind === 'line')
        g.append('line').attr('class', `line s-${it.color}`).attr('x1', x).attr('x2', x + 24).attr('y1', y).attr('y2', y).attr('stroke-dasharray', it.dashed ? '6 4' : null);
      else g.append('rect').attr('class', `swatch s-${it.color}`).attr('x', x + 4).attr('y', y - 6).attr('width', 14).attr('height', 12).attr('rx', 2);
      g.append('text').attr('class', 'legend-label').attr('x', x + 30).attr('y', y).attr('dy', '0.35em').each(function () {
        setSvgLabel(this, it.label);
      });
      x += w;
    }
    return items.length ? y + 16 : 0;
  }

  /**
   * Writes new legend labels in place (same items, colours and places as drawn by legend()):
   * the text of each changed label's runs, or the label anew when its runs differ.
   */
  protected relabelLegend(labels: string[]): void {
    const texts = this.svg.selectAll<SVGTextElement, unknown>('g.legend-items text.legend-label').nodes();
    labels.forEach((label, k) => {
      const el = texts[k];
      if (!el) return;
      const parts = labelParts(label);
      const runs = [...el.children];
      const same = runs.length === parts.length && parts.every((p, n) => (p.kind === 'base') === !runs[n]!.hasAttribute('baseline-shift')
        && (p.kind === 'base' || runs[n]!.getAttribute('baseline-shift') === (p.kind === 'sub' ? 'sub' : 'super')));
      if (same) parts.forEach((p, n) => setText(runs[n]!, p.text));
      else setSvgLabel(el, label);
    });
  }

  /** Axis titles: x under the plot, y rotated at the left. */
  protected axisTitles(x: string, y: string, left: number, right: number, top: number, bottom: number): void {
    this.svg.append('text').attr('class', 'axis-title').attr('x', (left + right) / 2).attr('y', bottom + 38).attr('text-anchor', 'middle').each(function () {
      setSvgLabel(this, x);
    });
    this.svg.append('text').attr('class', 'axis-title').attr('transform', `translate(14,${(top + bottom) / 2}) rotate(-90)`).attr('text-anchor', 'middle').each(function () {
      setSvgLabel(this, y);
    });
  }

  /** Draws the focusable marks (points or bars) and wires tooltips and keys. */
  protected setMarks(marks: Mark[], label: string): void {
    this.marks = marks;
    this.focus = Math.min(this.focus, Math.max(0, marks.length - 1));
    this.svg.attr('aria-label', label);
    const g = this.svg.append('g').attr('class', 'marks');
    marks.forEach((m, n) => {
      let el: Selection<SVGElement, unknown, null, undefined>;
      if (m.shape === 'circle') {
        el = g.append<SVGElement>('circle').attr('class', `point s-${m.color}`).attr('cx', m.x).attr('cy', m.y).attr('r', 4.5);
      } else {
        el = g.append<SVGElement>('rect').attr('class', `bar s-${m.color}`).attr('x', m.x).attr('y', m.y).attr('width', m.w ?? 0).attr('height', m.h ?? 0);
      }
      el.attr('role', 'img').attr('aria-label', m.label).attr('tabindex', n === this.focus ? 0 : -1).attr('data-n', n)
        .on('pointerenter', () => this.showTip(n))
        .on('focus', () => {
          this.focus = n;
          this.showTip(n);
        })
        .on('blur', () => this.tooltip.classList.remove('visible'));
    });
  }

  /**
   * Moves the marks drawn by setMarks to `marks` in place when they are the same points or
   * bars (series and index) in the same order; redraws the marks alone otherwise. Only
   * changed attributes are written.
   */
  protected moveMarks(marks: Mark[], label: string): void {
    const g = this.svg.select<SVGGElement>('g.marks');
    const nodes = g.empty() ? [] : [...g.node()!.children];
    const same = nodes.length === marks.length && marks.every((m, n) => m.shape === this.marks[n]?.shape && this.marks[n]?.s === m.s && this.marks[n]?.k === m.k && this.marks[n]?.color === m.color);
    if (!same) {
      g.remove();
      this.setMarks(marks, label);
      return;
    }
    this.marks = marks;
    setAttr(this.svg.node()!, 'aria-label', label);
    marks.forEach((m, n) => {
      const el = nodes[n]!;
      if (m.shape === 'circle') {
        setAttr(el, 'cx', String(m.x));
        setAttr(el, 'cy', String(m.y));
      } else {
        setAttr(el, 'x', String(m.x));
        setAttr(el, 'y', String(m.y));
        setAttr(el, 'width', String(m.w ?? 0));
        setAttr(el, 'height', String(m.h ?? 0));
      }
      setAttr(el, 'aria-label', m.label);
    });
  }

  private showTip(n: number): void {
    const m = this.marks[n];
    const node = this.svg.select<SVGElement>(`[data-n="${n}"]`).node();
    if (!m || !node) return;
    this.tooltip.textContent = m.label;
    this.tooltip.classList.add('visible');
    const box = node.getBoundingClientRect();
    const host = this.el.getBoundingClientRect();
    const tip = this.tooltip.getBoundingClientRect();
    const left = Math.max(0, Math.min(host.width - tip.width, box.left - host.left + box.width / 2 - tip.width / 2));
    const top = box.top - host.top - tip.height - 8;
    this.tooltip.style.left = `${left}px`;
    this.tooltip.style.top = `${top < 0 ? box.bottom - host.top + 8 : top}px`;
  }

  private onKey(ev: KeyboardEvent): void {
    if (!this.marks.length) return;
    const cur = this.marks[this.focus]!;
    const find = (s: number, k: number) => this.marks.findIndex((m) => m.s === s && m.k === k);
    const series = [...new Set(this.marks.map((m) => m.s))].sort((a, b) => a - b);
    let next = -1;
    switch (ev.key) {
      case 'ArrowRight': next = find(cur.s, cur.k + 1); break;
      case 'ArrowLeft': next = find(cur.s, cur.k - 1); break;
      case 'ArrowDown': next = find(series[series.indexOf(cur.s) + 1] ?? cur.s, cur.k); break;
      case 'ArrowUp': next = find(series[series.indexOf(cur.s) - 1] ?? cur.s, cur.k); break;
      case 'Home': next = find(cur.s, 0); break;
      case 'End': next = this.marks.reduce((b, m, n) => (m.s === cur.s && m.k > (this.marks[b]?.k ?? -1) ? n : b), -1); break;
      case 'Escape': this.tooltip.classList.remove('visible'); return;
      default: return;
    }
    ev.preventDefault();
    if (next < 0) return;
    this.focus = next;
    this.svg.selectAll('[data-n]').attr('tabindex', function () {
      return Number((this as Element).getAttribute('data-n')) === next ? 0 : -1;
    });
    this.svg.select<SVGElement>(`[data-n="${next}"]`).node()?.focus();
  }
}
