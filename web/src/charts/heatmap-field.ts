/**
 * The colours of a heatmap too large to print its numbers, drawn as one pixel per cell on a
 * <canvas> (inside a <foreignObject>, so it scales with the SVG; `image-rendering: pixelated`
 * keeps cells sharp), and its masked cells as one hatched <path>. A dragged slider then
 * rewrites one bitmap instead of restyling and repainting a thousand SVG rectangles
 * (native/bench/NOTES.md, "Sliders, fourth pass"). The per-cell elements stay, transparent, for
 * focus, hover and labels (heatmap.ts). Export turns the canvas into an <image> (export.ts).
 */
import { setAttr } from './attr';

const SVG_NS = 'http://www.w3.org/2000/svg';

export class ColourField {
  private readonly holder: SVGForeignObjectElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly maskedPath: SVGPathElement;
  private maskKey = '';

  /** Inserts the field into `svg` before `before` (the cells, which are drawn over it). */
  constructor(svg: SVGSVGElement, before: Element, hatchUrl: string) {
    this.holder = document.createElementNS(SVG_NS, 'foreignObject');
    this.holder.setAttribute('class', 'heatmap-field');
    this.holder.setAttribute('aria-hidden', 'true');
    this.canvas = document.createElement('canvas');
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
    setAttr(this.holder, 'x', String(left));
    setAttr(this.holder, 'y', String(top));
    setAttr(this.holder, 'width', String(cols * cell));
    setAttr(this.holder, 'height', String(rows * cell));
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
    // The hatched cells as one path, rebuilt only when the mask or the geometry changes.
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
}
