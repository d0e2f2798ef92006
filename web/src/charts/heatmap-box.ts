/**
 * The size of a heatmap's <svg> (heatmap.ts). A map built with `steadyBox` keeps its <svg> at
 * the largest size it has drawn at this width and shows its current size through the frame
 * around it (a div as wide and tall as the map, clipping the rest): a new row or a new cell
 * size then resizes no SVG root. A resized <svg> lays out all of its texts again and made
 * chapter 9's shape sliders lay the page out for ~2-3 ms per input (native/bench/NOTES.md,
 * "Sliders, tenth pass"). Cells and texts keep their coordinates, so nothing moves on screen.
 * A map wider than its element is scaled down as before (the <svg> at its own size, width 100%).
 * The drawn size is kept in data-width / data-height (export.ts and the tooltip read it).
 */
import { setAttr } from './attr';

export class HeatmapBox {
  /** The <svg>'s size while steady (0 x 0: sized to the map). */
  private w = 0;
  private h = 0;

  constructor(private readonly frame: HTMLElement, private readonly svg: SVGSVGElement, private readonly steady: boolean) {}

  /**
   * Sizes the frame and the <svg> for a map of `width` x `height` CSS px in an element `avail`
   * px wide. Returns the CSS px per user unit it is drawn at (below 1 where it is scaled down).
   */
  size(width: number, height: number, avail: number): number {
    const root = this.svg;
    const steady = this.steady && width <= avail;
    if (steady) {
      // As wide as the element (a new width starts the box again), as tall as the tallest map.
      if (this.w !== avail) [this.w, this.h] = [avail, 0];
      this.h = Math.max(this.h, height);
    } else {
      [this.w, this.h] = [width, height];
    }
    setAttr(root, 'viewBox', `0 0 ${this.w} ${this.h}`);
    setAttr(root, 'width', String(this.w));
    setAttr(root, 'height', String(this.h));
    setAttr(root, 'data-width', String(width));
    setAttr(root, 'data-height', String(height));
    // Style writes only when changed, as setAttr: an unchanged write still restyles the map.
    const css = (el: HTMLElement | SVGSVGElement, prop: 'width' | 'height' | 'maxWidth', value: string) => {
      if (el.style[prop] !== value) el.style[prop] = value;
    };
    css(root, 'width', steady ? `${this.w}px` : '');
    css(root, 'maxWidth', steady ? 'none' : `${width}px`);
    css(this.frame, 'width', steady ? `${width}px` : '');
    css(this.frame, 'height', steady ? `${height}px` : '');
    if (this.frame.classList.contains('steady') !== steady) this.frame.classList.toggle('steady', steady);
    return steady || avail <= 0 ? 1 : Math.min(1, avail / width);
  }
}
