/**
 * One matrix drawn as a keyboard-navigable grid inside <qk-scope>'s shadow root:
 * role=grid, one tab stop per grid (roving tabindex), arrow keys / Home / End move,
 * every cell carries an aria-label readout. Numbers are printed for matrices up to
 * 8 x 8; larger ones show them on hover (title) and focus (aria-label). Masked cells
 * are hatched, not zero. Axis titles (query down, key across) with 1-based indices, and a
 * legend with a title; columns are wide enough for the longest printed number. Colours are set through the CSSOM (el.style), which a
 * strict style-src CSP does not block, unlike style="" attributes. Colours, domain, legend,
 * which cells print numbers and keyboard movement: charts/heatmap-scale.ts, shared with the
 * tutorial's heatmaps (which draw SVG for export; this grid keeps the widget's part= API).
 */
import { fixed } from '../model/format';
import type { RowMajor } from '../model/matrix';
import { type Palette, colour, extentOf, legendScale, moveFocus, showsText } from '../charts/heatmap-scale';

export interface GridSpec {
  /** Short name, e.g. "weights" (data-matrix on the grid, used by tests and CSS). */
  name: string;
  title: string;
  values: RowMajor;
  palette: Palette;
  decimals: number;
  masked?: (i: number, j: number) => boolean;
  maskedText: string;
  cellLabel: (i: number, j: number, valueText: string) => string;
  gridLabel: string;
  /** Axis titles: rows (queries) and columns (keys, or dims of the output). */
  rowAxis: string;
  colAxis: string;
  /** What the colours encode, e.g. "weight". */
  legendTitle: string;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, part: string, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (part) e.setAttribute('part', part);
  if (text !== undefined) e.textContent = text;
  return e;
}

/** A figure with a caption, the grid and its legend. */
export function renderGrid(spec: GridSpec): HTMLElement {
  const { rows, cols, data } = spec.values;
  const fig = el('figure', 'matrix');
  fig.className = 'matrix';
  const cap = el('figcaption', 'matrix-title', spec.title);
  const grid = el('div', 'grid');
  grid.className = 'grid';
  grid.setAttribute('role', 'grid');
  grid.setAttribute('aria-label', spec.gridLabel);
  grid.dataset.matrix = spec.name;
  const extent = extentOf(spec.palette, data);
  const showText = showsText(rows, cols);
  // Wide enough for the longest number (cell text is 0.86em; 'ch' is a digit's width here).
  let longest = 0;
  if (showText) for (let k = 0; k < data.length; k++) longest = Math.max(longest, fixed(data[k]!, spec.decimals).length);
  const columns = `repeat(${cols}, max(var(--qk-cell-size, 3.4em), calc(${(longest * 0.86).toFixed(2)}ch + 0.6em)))`;
  grid.style.gridTemplateColumns = columns;
  const cells: HTMLElement[][] = [];
  for (let i = 0; i < rows; i++) {
    const row = el('div', 'row');
    row.className = 'row';
    row.setAttribute('role', 'row');
    const line: HTMLElement[] = [];
    for (let j = 0; j < cols; j++) {
      const x = data[i * cols + j]!;
      const masked = spec.masked?.(i, j) ?? false;
      const text = fixed(x, spec.decimals);
      const cell = el('div', masked ? 'cell masked' : 'cell');
      cell.className = masked ? 'cell masked' : 'cell';
      cell.setAttribute('role', 'gridcell');
      cell.tabIndex = i === 0 && j === 0 ? 0 : -1;
      cell.dataset.i = String(i);
      cell.dataset.j = String(j);
      cell.dataset.value = String(x);
      cell.dataset.masked = String(masked);
      const readout = spec.cellLabel(i + 1, j + 1, masked ? spec.maskedText : text);
      cell.setAttribute('aria-label', readout);
      cell.title = readout;
      if (!masked) {
        const c = colour(spec.palette, x, extent);
        cell.style.background = c.fill;
        cell.style.color = c.ink;
        if (showText) cell.textContent = text;
      }
      row.append(cell);
      line.push(cell);
    }
    grid.append(row);
    cells.push(line);
  }
  grid.addEventListener('keydown', (ev) => {
    const cur = (ev.target as HTMLElement).closest<HTMLElement>('[role=gridcell]');
    if (!cur) return;
    const to = moveFocus(ev.key, Number(cur.dataset.i), Number(cur.dataset.j), rows, cols);
    if (!to) return;
    ev.preventDefault();
    cur.tabIndex = -1;
    const next = cells[to[0]]![to[1]]!;
    next.tabIndex = 0;
    next.focus();
  });
  const plot = el('div', 'plot');
  plot.className = 'plot';
  const ticksX = el('div', 'ticks');
  ticksX.className = 'ticks ticks-x';
  ticksX.style.gridTemplateColumns = columns;
  const ticksY = el('div', 'ticks');
  ticksY.className = 'ticks ticks-y';
  for (let j = 0; j < cols; j++) ticksX.append(el('span', '', String(j + 1)));
  for (let i = 0; i < rows; i++) ticksY.append(el('span', '', String(i + 1)));
  const axisX = el('span', 'axis-label', spec.colAxis);
  axisX.className = 'axis axis-x';
  const axisY = el('span', 'axis-label', spec.rowAxis);
  axisY.className = 'axis axis-y';
  // The cells' readouts already name query and key: the axes are for the eye only.
  for (const e of [axisX, axisY, ticksX, ticksY]) e.setAttribute('aria-hidden', 'true');
  plot.append(axisX, ticksX, axisY, ticksY, grid);
  fig.append(cap, plot, legend(spec.palette, extent, spec.legendTitle));
  return fig;
}

/** Colour bar with its title and end values. */
function legend(palette: Palette, extent: number, title: string): HTMLElement {
  const box = el('div', 'legend');
  box.className = 'legend';
  box.setAttribute('aria-hidden', 'true');
  const bar = el('span', 'legend-bar');
  bar.className = 'legend-bar';
  const { stops, ticks } = legendScale(palette, extent, 8);
  bar.style.background = `linear-gradient(to right, ${stops.join(', ')})`;
  const name = el('span', 'legend-title', title);
  name.className = 'legend-title';
  box.append(name, el('span', 'legend-tick', ticks[0]!), bar, el('span', 'legend-tick', ticks[2]!));
  return box;
}
