/**
 * One attention strip of Figure 11.2: the characters the model read, left to right, each with
 * a bar whose height is the weight the chosen query position gives it (one layer, one head).
 * Drawn as SVG so the figure's PNG/SVG export carries it; the characters the text keeps are
 * kept (typing adds one), and only the bars that moved are rewritten.
 */
import { fixed } from '../../model/format';

const SVG = 'http://www.w3.org/2000/svg';
const CELL = 12;
const BAR = 46;
const TOP = 6;

export class AttentionStrip {
  readonly el: SVGSVGElement;
  private bars: SVGRectElement[] = [];
  private chars: SVGTextElement[] = [];
  private text = '';
  private base: SVGLineElement | null = null;

  constructor(testId: string) {
    this.el = document.createElementNS(SVG, 'svg');
    this.el.dataset.testid = testId;
    this.el.setAttribute('class', 'c11-strip');
    this.el.setAttribute('role', 'img');
  }

  /** `weights`: row `query` of the (n, n) attention, n = text.length; `label`: the strip's accessible name. */
  update(text: string, weights: ArrayLike<number>, query: number, label: string): void {
    if (text !== this.text) this.build(text);
    for (let j = 0; j < text.length; j++) {
      const w = weights[j] ?? 0;
      const h = Math.max(0, Math.min(1, w)) * BAR;
      const bar = this.bars[j]!;
      const y = String(TOP + BAR - h);
      if (bar.getAttribute('y') !== y) {
        bar.setAttribute('y', y);
        bar.setAttribute('height', String(h));
      }
      bar.dataset.value = fixed(w, 4);
      const cls = j === query ? 'c11-char c11-query' : 'c11-char';
      if (this.chars[j]!.getAttribute('class') !== cls) this.chars[j]!.setAttribute('class', cls);
    }
    this.el.setAttribute('aria-label', label);
  }

  parts(): SVGSVGElement[] {
    return [this.el];
  }

  /** Keeps the nodes of the characters the new text shares with the old one from the start (typing at the end adds one). */
  private build(text: string): void {
    const chars = [...text];
    const old = [...this.text];
    let keep = 0;
    while (keep < chars.length && keep < old.length && chars[keep] === old[keep]) keep++;
    this.text = text;
    const n = Math.max(1, chars.length);
    const width = n * CELL;
    const height = TOP + BAR + 22;
    this.el.setAttribute('viewBox', `0 0 ${width} ${height}`);
    // Drawn 1.25x on wide screens (15 px per character); CSS shrinks it to narrow columns.
    this.el.setAttribute('width', String(width * 1.25));
    this.el.setAttribute('height', String(height * 1.25));
    if (!this.base) {
      this.base = document.createElementNS(SVG, 'line');
      this.base.setAttribute('class', 'c11-base');
      this.base.setAttribute('y1', String(TOP + BAR + 0.5));
      this.base.setAttribute('y2', String(TOP + BAR + 0.5));
      this.base.setAttribute('x1', '0');
      this.el.append(this.base);
    }
    this.base.setAttribute('x2', String(width));
    for (let j = keep; j < this.bars.length; j++) {
      this.bars[j]!.remove();
      this.chars[j]!.remove();
    }
    this.bars.length = this.chars.length = keep;
    for (let j = keep; j < chars.length; j++) {
      const ch = chars[j]!;
      const bar = document.createElementNS(SVG, 'rect');
      bar.setAttribute('class', 'c11-bar');
      bar.setAttribute('x', String(j * CELL + 2));
      bar.setAttribute('width', String(CELL - 4));
      bar.setAttribute('y', String(TOP + BAR));
      bar.setAttribute('height', '0');
      const t = document.createElementNS(SVG, 'text');
      t.setAttribute('x', String(j * CELL + CELL / 2));
      t.setAttribute('y', String(TOP + BAR + 16));
      t.setAttribute('text-anchor', 'middle');
      t.textContent = ch === ' ' ? '␣' : ch;
      this.el.append(bar, t);
      this.bars.push(bar);
      this.chars.push(t);
    }
  }
}
