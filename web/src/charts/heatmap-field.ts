/**
 * The colours of a heatmap too large to print its numbers, drawn as one pixel per cell on a
 * <canvas> (inside a <foreignObject>, so it scales with the SVG; `image-rendering: pixelated`
 * keeps cells sharp), and its masked cells as one hatched <path>. A dragged slider then
 * rewrites one bitmap instead of restyling and repainting a thousand SVG rectangles
 * (native/bench/NOTES.md, "Sliders, fourth pass"). The per-cell elements stay, transparent, for
 * focus, hover and labels (heatmap.ts). Export turns the canvas into an <image> (export.ts);
 * a canvas map (below) exports as vector cells instead (Heatmap.parts).
 * A map that opts in (`canvasNumbers`) draws its printed numbers here too, in device pixels
 * (drawPrinted): a new value or a new shape then lays out no SVG text (native/bench/NOTES.md,
 * "Sliders, sixth pass"), its texts copied from a cache of their bitmaps (heatmap-glyphs.ts).
 */
import { setAttr } from './attr';
import { type GlyphText, drawTexts } from './heatmap-glyphs';

const SVG_NS = 'http://www.w3.org/2000/svg';

/** One printed cell: its fill, the ink of its number and the number ('' for none); masked cells are hatched by the field's path. */
export interface PrintedCell {
  fill: string;
  ink: string;
  text: string;
  masked: boolean;
}

function sameCells(a: readonly PrintedCell[], b: readonly PrintedCell[]): boolean {
  if (a.length !== b.length) return false;
  for (let k = 0; k < a.length; k++) {
    const x = a[k]!;
    const y = b[k]!;
    if (x.fill !== y.fill || x.ink !== y.ink || x.text !== y.text || x.masked !== y.masked) return false;
  }
  return true;
}

export class ColourField {
  private readonly holder: SVGForeignObjectElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly maskedPath: SVGPathElement;
  private maskKey = '';
  /** The canvas of printed maps (drawPrinted), in device pixels, created on first use. */
  private print: { canvas: HTMLCanvasElement; ctx: CanvasRenderingContext2D | null; font: string; scale: number; drawn: string; cells: readonly PrintedCell[] } | null = null;

  /** Inserts the field into `svg` before `before` (the cells, which are drawn over it). */
  constructor(svg: SVGSVGElement, before: Element, hatchUrl: string) {
    this.holder = document.createElementNS(SVG_NS, 'foreignObject');
    this.holder.setAttribute('class', 'heatmap-field');
    this.holder.setAttribute('aria-hidden', 'true');
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'pixels';
    this.holder.append(this.canvas);
    this.maskedPath = document.createElementNS(SVG_NS, 'path');
    this.maskedPath.setAttribute('class', 'heatmap-masked');
    this.maskedPath.setAttribute('fill', hatchUrl);
    this.maskedPath.setAttribute('aria-hidden', 'true');
    svg.insertBefore(this.holder, before);
    svg.insertBefore(this.maskedPath, before);
  }

  /** Shows or hides the field (small maps draw coloured cells instead). */
  show(on: boolean): void {
    setAttr(this.holder, 'display', on ? 'inline' : 'none');
    setAttr(this.maskedPath, 'display', on ? 'inline' : 'none');
  }

  /**
   * Draws `rows` x `cols` cells of `cell` CSS px from (left, top): `rgb(k)` is entry k's
   * colour (row-major), `masked[k]` whether it is hatched instead.
   */
  draw(rows: number, cols: number, cell: number, left: number, top: number, rgb: (k: number) => readonly [number, number, number],
    masked: readonly boolean[]): void {
    this.place(rows, cols, cell, left, top, false);
    if (this.canvas.width !== cols) this.canvas.width = cols;
    if (this.canvas.height !== rows) this.canvas.height = rows;
    const ctx = this.canvas.getContext('2d');
    if (ctx && rows > 0 && cols > 0) {
      const img = ctx.createImageData(cols, rows);
      const px = img.data;
      for (let k = 0; k < rows * cols; k++) {
        if (masked[k]) continue; // transparent: the hatch is drawn over it
        const [r, g, b] = rgb(k);
        px[4 * k] = r;
        px[4 * k + 1] = g;
        px[4 * k + 2] = b;
        px[4 * k + 3] = 255;
      }
      ctx.putImageData(img, 0, 0);
    }
    this.hatch(rows, cols, cell, left, top, masked);
  }

  /** The hatched cells as one path, rebuilt only when the mask or the geometry changes. */
  private hatch(rows: number, cols: number, cell: number, left: number, top: number, masked: readonly boolean[]): void {
    const key = `${rows},${cols},${cell},${left},${top},${masked.map((m) => (m ? 1 : 0)).join('')}`;
    if (key === this.maskKey) return;
    this.maskKey = key;
    let d = '';
    for (let i = 0; i < rows; i++)
      for (let j = 0; j < cols; j++)
        if (masked[i * cols + j]) d += `M${left + j * cell},${top + i * cell}h${cell}v${cell}h${-cell}z`;
    setAttr(this.maskedPath, 'd', d || 'M0,0');
    setAttr(this.maskedPath, 'visibility', d ? 'visible' : 'hidden');
  }

  /**
   * Draws a printed map: rounded cells of `cell` CSS px with a 1 px gap, as the SVG cells are
   * drawn (heatmap.ts), each number centred in `font` with its baseline 0.35 em below the
   * middle (the SVG text's dy); `scale` device pixels per CSS px keep the numbers sharp.
   * Masked cells are left out of the bitmap and hatched by the path, as in draw().
   */
  drawPrinted(rows: number, cols: number, cell: number, left: number, top: number, cells: readonly PrintedCell[],
    font: { px: number; css: string }, scale: number): void {
    this.place(rows, cols, cell, left, top, true);
    this.hatch(rows, cols, cell, left, top, cells.map((c) => c.masked));
    const p = (this.print ??= { canvas: this.holder.appendChild(document.createElement('canvas')), ctx: null, font: '', scale: 0, drawn: '', cells: [] });
    p.canvas.className = 'print';
    const w = cols * cell;
    const h = rows * cell;
    // The bitmap only grows (the holder clips it): a resized canvas is reallocated and loses its
    // state, and setting its font again makes the browser resolve the canvas's style (a forced
    // style recalc per map and input when a shape slider resized it every time).
    if (p.scale !== scale || w * scale > p.canvas.width || h * scale > p.canvas.height) {
      p.canvas.width = Math.ceil(Math.max(w, p.canvas.width / (p.scale || scale)) * scale);
      p.canvas.height = Math.ceil(Math.max(h, p.canvas.height / (p.scale || scale)) * scale);
      p.canvas.style.width = `${p.canvas.width / scale}px`;
      p.canvas.style.height = `${p.canvas.height / scale}px`;
      p.scale = scale;
      p.ctx = p.canvas.getContext('2d');
      p.font = p.drawn = '';
      p.ctx?.setTransform(scale, 0, 0, scale, 0, 0);
      // A fixed direction: the default, 'inherit', makes each fillText resolve the canvas's style.
      if (p.ctx) p.ctx.direction = 'ltr';
    }
    const ctx = p.ctx;
    if (!ctx) return;
    // Drawn again only when something it shows changed (a slider that moves another figure's
    // numbers, or a redraw for a new width with the same cells, leaves it as it is).
    const geometry = `${rows},${cols},${cell},${font.css},${scale}`;
    if (geometry === p.drawn && sameCells(cells, p.cells)) return;
    p.drawn = geometry;
    p.cells = cells.slice();
    ctx.clearRect(0, 0, p.canvas.width / scale, p.canvas.height / scale);
    const side = cell - 2;
    const dy = 0.35 * font.px;
    const texts: GlyphText[] = [];
    for (let k = 0; k < cells.length; k++) {
      const c = cells[k]!;
      if (c.masked) continue;
      const x = (k % cols) * cell + 1;
      const y = Math.floor(k / cols) * cell + 1;
      ctx.fillStyle = c.fill;
      ctx.beginPath();
      ctx.roundRect(x, y, side, side, 3);
      ctx.fill();
      if (c.text) texts.push({ text: c.text, ink: c.ink, x: x + side / 2, y: y + side / 2 + dy });
    }
    // Cells do not overlap, so the numbers may go on after every fill.
    if (texts.length && !drawTexts(ctx, texts, font.css, scale)) {
      if (p.font !== font.css) {
        ctx.font = p.font = font.css;
        ctx.textAlign = 'center';
        ctx.textBaseline = 'alphabetic';
      }
      for (const t of texts) {
        ctx.fillStyle = t.ink;
        ctx.fillText(t.text, t.x, t.y);
      }
    }
  }

  /** Places the holder over the cells; `printed` turns off the one-pixel-per-cell look. */
  private place(rows: number, cols: number, cell: number, left: number, top: number, printed: boolean): void {
    setAttr(this.holder, 'x', String(left));
    setAttr(this.holder, 'y', String(top));
    setAttr(this.holder, 'width', String(cols * cell));
    setAttr(this.holder, 'height', String(rows * cell));
    if (this.holder.classList.contains('printed') !== printed) this.holder.classList.toggle('printed', printed);
  }
}
