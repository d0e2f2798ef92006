/**
 * One attention strip of Figure 11.2: the characters the model read, left to right, each with
 * a bar whose height is the weight the chosen query position gives it (one layer, one head).
 * Drawn as SVG so the figure's PNG/SVG export carries it; the characters are built once per
 * text and only the bars move when the weights change.
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
      this.chars[j]!.setAttribute('class', j === query ? 'c11-char c11-query' : 'c11-char');
    }
    this.el.setAttribute('aria-label', label);
  }

  parts(): SVGSVGElement[] {
    return [this.el];
  }

  private build(text: string): void {
    this.text = text;
    const n = Math.max(1, text.length);
    const width = n * CELL;
    const height = TOP + BAR + 22;
    this.el.setAttribute('viewBox', `0 0 ${width} ${height}`);
    this.el.setAttribute('width', String(width));
    this.el.setAttribute('height', String(height));
    this.el.replaceChildren();
    const base = document.createElementNS(SVG, 'line');
    base.setAttribute('class', 'c11-base');
    base.setAttribute('x1', '0');
    base.setAttribute('x2', String(width));
    base.setAttribute('y1', String(TOP + BAR + 0.5));
    base.setAttribute('y2', String(TOP + BAR + 0.5));
    this.el.append(base);
    this.bars = [];
    this.chars = [];
    [...text].forEach((ch, j) => {
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
    });
  }
}
