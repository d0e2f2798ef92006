/**
 * A canvas map's tick labels as HTML (heatmap.ts, `canvasNumbers`): one <span> per row and
 * column over the <svg>, placed by a CSS transform. Moving a span by its transform needs no
 * layout, and its text ("1", "2", ...) never changes, so a shape slider lays out only the ticks
 * it adds. As SVG <text>, every tick was laid out again on each input of chapter 9's L slider,
 * whose cell size moves them all (~2 ms of the frame in a trace: native/bench/NOTES.md,
 * "Sliders, twelfth pass"). Print and export draw the map as vector cells and SVG ticks again
 * (heatmap-axes.ts); these spans are hidden then. They are aria-hidden: each cell's label names
 * its row and column already.
 */

export interface TickGeometry {
  rows: number;
  cols: number;
  /** Cell size and the grid's top-left corner, in the SVG's user units. */
  cell: number;
  left: number;
  top: number;
  /** CSS px per user unit (below 1 where the <svg> is scaled down to fit its element). */
  scale: number;
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
    this.colTicks.className = 'cols';
    this.rowTicks = document.createElement('div');
    this.rowTicks.className = 'rows';
    this.el.append(this.colTicks, this.rowTicks);
    this.el.hidden = true;
  }

  /** Shows or hides the layer (the SVG ticks are drawn instead while it is hidden). */
  show(on: boolean): void {
    if (this.el.hidden === on) this.el.hidden = !on;
  }

  /**
   * Places the ticks as heatmap-axes.ts places the SVG ones: column labels centred above their
   * columns with their baseline 10 units above the grid, row labels ending 10 units left of it,
   * centred on their rows.
   */
  draw(g: TickGeometry): void {
    const key = `${g.rows},${g.cols},${g.cell},${g.left},${g.top},${g.scale}`;
    if (key === this.drawn) return;
    this.drawn = key;
    const zoom = `scale(${g.scale})`;
    if (this.el.style.transform !== zoom) this.el.style.transform = zoom;
    ticks(this.colTicks, g.cols, (j) => `translate(${g.left + j * g.cell + g.cell / 2}px,${g.top - 10}px)`);
    ticks(this.rowTicks, g.rows, (i) => `translate(${g.left - 10}px,${g.top + i * g.cell + g.cell / 2}px)`);
  }
}

/** Keeps `n` spans labelled 1..n in `box` (adding or removing at the end) and moves each to `at(k)`. */
function ticks(box: HTMLElement, n: number, at: (k: number) => string): void {
  while (box.childElementCount > n) box.lastElementChild!.remove();
  while (box.childElementCount < n) {
    const s = document.createElement('span');
    s.textContent = String(box.childElementCount + 1);
    box.append(s);
  }
  for (let k = 0; k < n; k++) {
    const s = box.children[k] as HTMLElement;
    const t = at(k);
    if (s.style.transform !== t) s.style.transform = t;
  }
}
