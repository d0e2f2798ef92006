/**
 * Keeps heatmaps that draw their numbers on a canvas (heatmap.ts, `canvasNumbers`) right when
 * the page's rendering changes without their width changing: a new device pixel ratio (another
 * monitor, a zoom) redraws their bitmaps at the new ratio, and printing switches them to SVG
 * cells and text (vector numbers in print and PDF), afterprint back.
 */

/** What this file needs of a map: its element and a redraw as it is. */
export interface CanvasMap {
  readonly el: Element;
  redraw(): void;
}

/** Maps that draw their numbers on a canvas (dropped once detached; the next update adds them again). */
const canvasMaps = new Set<CanvasMap>();
/** True while the page is printed: canvas maps draw vector cells and text instead. */
let printing = false;
let watching = false;

/**
 * Installs, once, the listeners shared by every canvas map: a change of devicePixelRatio (a
 * media query for the current ratio, made again after each change) redraws their bitmaps at the
 * new ratio; beforeprint / print media switch them to SVG cells and text, afterprint back.
 */
function install(): void {
  if (watching || typeof matchMedia !== 'function') return;
  watching = true;
  const redraw = () => {
    for (const map of canvasMaps) {
      if (!map.el.isConnected) canvasMaps.delete(map); // update() registers it again
      else map.redraw();
    }
  };
  const setPrinting = (on: boolean) => {
    if (printing === on) return;
    printing = on;
    redraw();
  };
  let ratio: MediaQueryList | null = null;
  const watchRatio = () => {
    ratio?.removeEventListener('change', onRatio);
    ratio = matchMedia(`(resolution: ${window.devicePixelRatio || 1}dppx)`);
    ratio.addEventListener('change', onRatio);
  };
  const onRatio = () => {
    watchRatio();
    redraw();
  };
  watchRatio(); // called from a map's update(): no redraw now
  const print = matchMedia('print');
  print.addEventListener('change', () => setPrinting(print.matches));
  window.addEventListener('beforeprint', () => setPrinting(true));
  window.addEventListener('afterprint', () => setPrinting(false));
}

/** Registers a canvas map (from its update()); installs the shared listeners once. */
export function watchCanvasMap(map: CanvasMap): void {
  canvasMaps.add(map);
  install();
}

/** True while the page is printed: canvas maps draw vector cells and text instead. */
export function isPrinting(): boolean {
  return printing;
}
