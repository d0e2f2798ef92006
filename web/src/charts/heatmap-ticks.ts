/**
 * A canvas map's tick labels as a layer over its <svg> (heatmap.ts, `canvasNumbers`): one
 * small <svg> per label, holding one <text> drawn as heatmap-axes.ts draws the map's own ticks
 * (same class, anchor and baseline, so the same font and place in every language), and moved
 * by a CSS transform. A transform on an element of the page needs no layout, and the label
 * ("1", "2", ...) never changes, so a shape slider lays out only the labels it adds. As <text>s
 * of the map's <svg>, every tick was laid out again on each input of chapter 9's L slider,
 * whose cell size moves them all (~2 ms of the frame in a trace: native/bench/NOTES.md,
 * "Sliders, twelfth pass"). (HTML spans placed by a fixed baseline offset sat 4 px low in
 * Chinese, where the line box takes its height from the CJK font: review.) Shown only while the
 * map is drawn at its own size: print, export and a map scaled down to fit draw the SVG ticks.
 * aria-hidden: each cell's label names its row and column already.
 */

const SVG_NS = 'http://www.w3.org/2000/svg';

export interface TickGeometry {
  rows: number;
  cols: number;
  /** Cell size and the grid's top-left corner, in CSS px (the map drawn at its own size). */
  cell: number;
  left: number;
  top: number;
}

export class TickLayer {
  readonly el: HTMLDivElement;
  private readonly colTicks: HTMLDivElement;
  private readonly rowTicks: HTMLDivElement;
  private drawn = '';

  constructor() {
    this.el = document.createElement('div');
    this.el.className = 'heatmap-ticks';
    this.el.setAttribute('aria-hidden', 'true');
    this.colTicks = document.createElement('div');
    this.rowTicks = document.createElement('div');
    this.el.append(this.colTicks, this.rowTicks);
    this.el.hidden = true;
  }

  /** Shows or hides the layer (the SVG ticks are drawn instead while it is hidden). */
  show(on: boolean): void {
    if (this.el.hidden === on) this.el.hidden = !on;
  }

  /**
   * Places the labels where heatmap-axes.ts puts the SVG ones: column labels centred on their
   * columns with their baseline 10 px above the grid, row labels ending 10 px left of it,
   * centred on their rows (dy 0.35em).
   */
  draw(g: TickGeometry): void {
    const key = `${g.rows},${g.cols},${g.cell},${g.left},${g.top}`;
    if (key === this.drawn) return;
    this.drawn = key;
    ticks(this.colTicks, g.cols, 'middle', (j) => `translate(${g.left + j * g.cell + g.cell / 2}px,${g.top - 10}px)`);
    ticks(this.rowTicks, g.rows, 'end', (i) => `translate(${g.left - 10}px,${g.top + i * g.cell + g.cell / 2}px)`);
  }
}

/** Keeps `n` labels 1..n in `box` (adding or removing at the end) and moves each to `at(k)`. */
function ticks(box: HTMLElement, n: number, anchor: 'middle' | 'end', at: (k: number) => string): void {
  while (box.childElementCount > n) box.lastElementChild!.remove();
  while (box.childElementCount < n) {
    const svg = document.createElementNS(SVG_NS, 'svg');
    const text = document.createElementNS(SVG_NS, 'text');
    text.setAttribute('class', 'tick');
    text.setAttribute('text-anchor', anchor);
    if (anchor === 'end') text.setAttribute('dy', '0.35em');
    text.textContent = String(box.childElementCount + 1);
    svg.append(text);
    box.append(svg);
  }
  for (let k = 0; k < n; k++) {
    const s = box.children[k] as SVGSVGElement;
    const t = at(k);
    if (s.style.transform !== t) s.style.transform = t;
  }
}
