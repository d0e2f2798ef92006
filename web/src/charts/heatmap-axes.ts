/**
 * The heatmap's axis titles and tick labels (heatmap.ts). The labels are kept and moved: a new
 * shape adds or removes only the ticks it needs. Rebuilding them laid every label out again on
 * each input of a shape slider (native/bench/NOTES.md, "Sliders, sixth pass").
 */
import { setAttr, setText } from './attr';

const SVG_NS = 'http://www.w3.org/2000/svg';

export interface AxesGeometry {
  rows: number;
  cols: number;
  /** Cell size and the grid's top-left corner, in the SVG's user units. */
  cell: number;
  left: number;
  top: number;
  rowAxis: string;
  colAxis: string;
  /** False: the tick labels are left as they are (a canvas map shows its tick layer: heatmap-ticks.ts). */
  ticks?: boolean;
}

/** Draws the axes into `axes` (an empty <g> the first time): column title, row title, column ticks, row ticks. */
export function drawAxes(axes: SVGGElement, a: AxesGeometry): void {
  if (!axes.firstChild) {
    axes.append(svgText('axis-title'), svgText('axis-title'), document.createElementNS(SVG_NS, 'g'), document.createElementNS(SVG_NS, 'g'));
  }
  const [colTitle, rowTitle, colTicks, rowTicks] = [...axes.children] as SVGElement[];
  place(colTitle!, a.left + (a.cols * a.cell) / 2, 12, 'middle', `${a.colAxis} →`);
  place(rowTitle!, 2, a.top - 10, 'start', `${a.rowAxis} ↓`);
  if (a.ticks === false) return;
  ticks(colTicks!, a.cols, (t, j) => place(t, a.left + j * a.cell + a.cell / 2, a.top - 10, 'middle', String(j + 1)));
  ticks(rowTicks!, a.rows, (t, i) => {
    place(t, a.left - 10, a.top + i * a.cell + a.cell / 2, 'end', String(i + 1));
    setAttr(t, 'dy', '0.35em');
  });
}

function svgText(cls: string): SVGTextElement {
  const t = document.createElementNS(SVG_NS, 'text');
  t.setAttribute('class', cls);
  return t;
}

/** Writes a label's position, anchor and text, only what changed. */
function place(t: SVGElement, x: number, y: number, anchor: string, text: string): void {
  setAttr(t, 'x', String(x));
  setAttr(t, 'y', String(y));
  setAttr(t, 'text-anchor', anchor);
  setText(t, text);
}

/** Keeps `n` tick labels in `g` (adding or removing at the end) and updates each. */
function ticks(g: SVGElement, n: number, each: (t: SVGElement, k: number) => void): void {
  while (g.childElementCount > n) g.lastElementChild!.remove();
  while (g.childElementCount < n) g.append(svgText('tick'));
  for (let k = 0; k < n; k++) each(g.children[k] as SVGElement, k);
}
