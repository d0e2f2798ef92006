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
