import { setAttr, setOwnAttr, setText } from './attr';

/**
 * A heatmap's cell elements (heatmap.ts): one <g class="cell"> per entry of a rows x cols map,
 * in row-major order, each carrying its datum as d3 does (`__data__`, so d3 selections and the
 * cells' listeners read it). A new shape keeps the cells it still has, removes the others and
 * inserts the new ones in place; the same shape only hands each cell its new datum. d3's keyed
 * join built and looked up a key string per cell and datum on every input (a chapter 9 L input,
 * 640 cells, in a CPU profile: 2.0 -> 0.7 ms; native/bench/NOTES.md, "Sliders, tenth pass").
 */

interface Grid {
  rows: number;
  cols: number;
  nodes: SVGGElement[];
}

const grids = new WeakMap<Element, Grid>();

/** The cells of `group` for `data` (row-major, rows x cols), made with `make` where missing. */
export function joinCells<T>(group: SVGGElement, data: readonly T[], rows: number, cols: number, make: () => SVGGElement): readonly SVGGElement[] {
  let g = grids.get(group);
  if (!g) grids.set(group, (g = { rows: 0, cols: 0, nodes: [] }));
  if (g.rows !== rows || g.cols !== cols) {
    const next: SVGGElement[] = new Array<SVGGElement>(rows * cols);
    for (let i = 0; i < g.rows; i++) {
      for (let j = 0; j < g.cols; j++) {
        const n = g.nodes[i * g.cols + j]!;
        if (i < rows && j < cols) next[i * cols + j] = n;
        else n.remove();
      }
    }
    // Kept cells are in order already; each new one goes in before the cell after it.
    let after: SVGGElement | null = null;
    for (let k = rows * cols - 1; k >= 0; k--) {
      let n = next[k];
      if (!n) group.insertBefore((n = next[k] = make()), after);
      after = n;
    }
    [g.rows, g.cols, g.nodes] = [rows, cols, next];
  }
  for (let k = 0; k < g.nodes.length; k++) (g.nodes[k] as unknown as { __data__: T }).__data__ = data[k]!;
  return g.nodes;
}

/** The geometry each cell was last placed with ('grid', or the cell size and corner in px). */
const placed = new WeakMap<Element, string>();

/**
 * Places cell (i, j) (a <g> holding a rect and a text): `px` null puts it in grid units, for a
 * group scaled by the cell size (maps on a canvas: unfilled, no text); else a printed map's cell
 * of `px.cell` CSS px from (left, top), 1 px in from its square. A cell keeps its (i, j) (the
 * join keeps them in place), so it is written only when the mode or the cell size changes, not
 * checked on every input.
 */
export function placeCell(g: SVGGElement, i: number, j: number, px: { cell: number; left: number; top: number } | null): void {
  const key = px ? `${px.cell},${px.left},${px.top}` : 'grid';
  if (placed.get(g) === key) return;
  placed.set(g, key);
  const rect = g.firstElementChild as SVGRectElement;
  const text = rect.nextElementSibling as SVGTextElement;
  setAttr(g, 'data-i', String(i));
  setAttr(g, 'data-j', String(j));
  if (!px) {
    // The rect's x and y, not a transform per cell: each transform is a paint property node
    // of its own, and 640 of them cost chapter 9's maps ~1 ms of paint and layerize per input
    // (native/bench/NOTES.md, "Sliders, twelfth pass").
    if (g.hasAttribute('transform')) g.removeAttribute('transform');
    setAttr(rect, 'x', String(j));
    setAttr(rect, 'y', String(i));
    setAttr(rect, 'width', '1');
    setAttr(rect, 'height', '1');
    // Square: rx = 3 on a 1 x 1 rect would round it to a circle (outlines, and a fifth of the
    // cell missing the pointer: reviewer).
    setAttr(rect, 'rx', '0');
    // No fill (the canvas paints it; heatmap.css keeps the rect under the pointer): a
    // transparent fill was still painted and layerized, cell by cell.
    setOwnAttr(rect, 'fill', 'none');
    if (rect.classList.contains('masked')) rect.classList.remove('masked');
    setText(text, '');
    return;
  }
  const side = px.cell - 2;
  setAttr(g, 'transform', `translate(${px.left + j * px.cell + 1},${px.top + i * px.cell + 1})`);
  setAttr(rect, 'x', '0');
  setAttr(rect, 'y', '0');
  setAttr(rect, 'rx', '3');
  setAttr(rect, 'width', String(side));
  setAttr(rect, 'height', String(side));
  setAttr(text, 'x', String(side / 2));
  setAttr(text, 'y', String(side / 2));
}
