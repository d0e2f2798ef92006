/**
 * Heatmap of a small matrix (d3): one cell per entry, numbers printed in cells
 * for matrices up to 8 x 8, a legend that is always shown, hatched masked cells,
 * a tooltip on hover and focus, and keyboard focus with arrow keys (one tab stop,
 * roving tabindex), each cell carrying an aria-label readout.
 * Palettes: 'diverging' = RdBu reversed on a symmetric domain centred at 0 (signed
 * scores); 'unit' = viridis on the fixed domain [0, 1] (weights).
 */
import { select, interpolateRdBu, interpolateViridis, scaleLinear, color as d3color, type Selection } from 'd3';
import type { RowMajor } from '../model/matrix';
import { fixed } from '../model/format';

export type Palette = 'diverging' | 'unit';

export interface HeatmapSpec {
  values: RowMajor;
  /** True where the entry is masked (drawn hatched, no number). */
  masked?: (i: number, j: number) => boolean;
  palette: Palette;
  /** Decimals printed in cells and in readouts. */
  decimals: number;
  rowAxis: string;
  colAxis: string;
  /** Accessible name of the whole chart. */
  label: string;
  /** aria-label / tooltip of one cell; i and j are 1-based. */
  cellLabel: (i: number, j: number, valueText: string) => string;
  maskedText: string;
  legendTitle: string;
  /** Show the "masked" swatch in the legend. */
  maskedLegend?: string;
}

interface Cell {
  i: number;
  j: number;
  value: number;
  masked: boolean;
}

const CELL = 66;
const LEFT = 64;
const TOP = 44;
const PAD = 6;
const MAX_TEXT = 8;
let uid = 0;

/** Colour of a value under a palette with a given symmetric extent. */
export function paletteColor(palette: Palette, extent: number) {
  if (palette === 'unit') return (x: number) => interpolateViridis(Math.min(1, Math.max(0, x)));
  return (x: number) => interpolateRdBu(1 - (Math.min(extent, Math.max(-extent, x)) + extent) / (2 * extent));
}

/** Dark or light text, whichever reads better on `fill`. */
function inkOn(fill: string): string {
  const c = d3color(fill)?.rgb();
  if (!c) return 'currentColor';
  const lin = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
  const lum = 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b);
  return lum > 0.3 ? '#111' : '#fff';
}

/** Symmetric, rounded extent of the finite values (1 when there are none). */
export function symmetricExtent(values: ArrayLike<number>): number {
  let m = 0;
  for (let k = 0; k < values.length; k++) if (Number.isFinite(values[k]!)) m = Math.max(m, Math.abs(values[k]!));
  if (m === 0) return 1;
  const nice = scaleLinear().domain([-m, m]).nice(4).domain()[1]!;
  return nice;
}

export class Heatmap {
  readonly el: HTMLElement;
  private readonly id = `hm${++uid}`;
  private readonly svg: Selection<SVGSVGElement, unknown, null, undefined>;
  private readonly legend: Selection<SVGSVGElement, unknown, null, undefined>;
  private readonly tooltip: HTMLDivElement;
  private focus: [number, number] = [0, 0];
  private spec: HeatmapSpec | null = null;
  /** Called when the pointer or keyboard focus enters a cell (null on leave), to sync other charts. */
  onCellFocus: ((cell: [number, number] | null) => void) | null = null;

  constructor(testId: string) {
    this.el = document.createElement('div');
    this.el.className = 'heatmap';
    this.el.dataset.testid = testId;
    const plot = document.createElement('div');
    plot.className = 'heatmap-plot';
    this.el.append(plot);
    this.svg = select(plot).append('svg').attr('class', 'heatmap-svg').attr('role', 'group');
    const defs = this.svg.append('defs');
    hatchPattern(defs, `${this.id}-hatch`);
    this.svg.append('g').attr('class', 'axes');
    this.svg.append('g').attr('class', 'cells');
    this.tooltip = document.createElement('div');
    this.tooltip.className = 'tooltip';
    this.tooltip.setAttribute('aria-hidden', 'true');
    plot.append(this.tooltip);
    this.legend = select(this.el).append('svg').attr('class', 'legend').attr('aria-hidden', 'true');
    hatchPattern(this.legend.append('defs'), `${this.id}-lhatch`);
    this.svg.on('keydown', (ev: KeyboardEvent) => this.onKey(ev));
    this.svg.on('pointerleave', () => {
      this.hideTooltip();
      this.onCellFocus?.(null);
    });
  }

  /** The chart's SVG elements (plot, then legend), for export. */
  parts(): SVGSVGElement[] {
    return [this.svg.node()!, this.legend.node()!];
  }

  /** Outlines cell (i, j) (0-based) as if hovered, or clears the outline; for synchronized charts. */
  highlight(cell: [number, number] | null): void {
    this.svg.selectAll<SVGGElement, Cell>('g.cell').classed('linked', (d) => cell !== null && d.i === cell[0] && d.j === cell[1]);
  }

  /** Width in CSS pixels at which cells are drawn at their designed size. */
  static naturalWidth(cols: number): number {
    return LEFT + cols * CELL + PAD;
  }

  update(spec: HeatmapSpec): void {
    this.spec = spec;
    const { rows, cols, data } = spec.values;
    const extent = spec.palette === 'unit' ? 1 : symmetricExtent(data);
    const fillOf = paletteColor(spec.palette, extent);
    const showText = rows <= MAX_TEXT && cols <= MAX_TEXT;
    const width = Heatmap.naturalWidth(cols);
    const height = TOP + rows * CELL + PAD;
    this.focus = [Math.min(this.focus[0], rows - 1), Math.min(this.focus[1], cols - 1)];

    this.svg
      .attr('viewBox', `0 0 ${width} ${height}`)
      .attr('width', width)
      .attr('height', height)
      .style('max-width', `${width}px`)
      .attr('aria-label', spec.label)
      .attr('data-rows', rows)
      .attr('data-cols', cols);

    this.drawAxes(rows, cols, spec);

    const cells: Cell[] = [];
    for (let i = 0; i < rows; i++)
      for (let j = 0; j < cols; j++)
        cells.push({ i, j, value: data[i * cols + j]!, masked: spec.masked?.(i, j) ?? false });

    const hatch = `url(#${this.id}-hatch)`;
    const join = this.svg
      .select<SVGGElement>('g.cells')
      .selectAll<SVGGElement, Cell>('g.cell')
      .data(cells, (d) => `${d.i},${d.j}`)
      .join((enter) => {
        const g = enter.append('g').attr('class', 'cell').attr('role', 'img');
        g.append('rect').attr('width', CELL - 2).attr('height', CELL - 2).attr('rx', 3);
        g.append('text').attr('x', (CELL - 2) / 2).attr('y', (CELL - 2) / 2).attr('dy', '0.35em').attr('text-anchor', 'middle');
        g.on('pointerenter', (_ev, d) => {
          this.showTooltip(d);
          this.onCellFocus?.([d.i, d.j]);
        }).on('focus', (_ev, d) => {
          this.focus = [d.i, d.j];
          this.showTooltip(d);
          this.onCellFocus?.([d.i, d.j]);
        }).on('blur', () => {
          this.hideTooltip();
          this.onCellFocus?.(null);
        });
        return g;
      });

    join
      .attr('transform', (d) => `translate(${LEFT + d.j * CELL + 1},${TOP + d.i * CELL + 1})`)
      .attr('tabindex', (d) => (d.i === this.focus[0] && d.j === this.focus[1] ? 0 : -1))
      .attr('data-i', (d) => d.i)
      .attr('data-j', (d) => d.j)
      .attr('data-value', (d) => String(d.value))
      .attr('data-masked', (d) => String(d.masked))
      .attr('aria-label', (d) => spec.cellLabel(d.i + 1, d.j + 1, this.valueText(d)));
    join
      .select('rect')
      .attr('fill', (d) => (d.masked ? hatch : fillOf(d.value)))
      .classed('masked', (d) => d.masked);
    join
      .select('text')
      .text((d) => (!showText || d.masked ? '' : fixed(d.value, spec.decimals)))
      .attr('fill', (d) => (d.masked ? 'currentColor' : inkOn(fillOf(d.value))));

    this.drawLegend(spec, extent, fillOf);
  }

  private valueText(d: Cell): string {
    if (!this.spec) return '';
    return d.masked ? `${this.spec.maskedText} (${fixed(d.value, this.spec.decimals)})` : fixed(d.value, this.spec.decimals);
  }

  private drawAxes(rows: number, cols: number, spec: HeatmapSpec): void {
    const axes = this.svg.select<SVGGElement>('g.axes');
    axes.selectAll('*').remove();
    axes.append('text').attr('class', 'axis-title').attr('x', LEFT + (cols * CELL) / 2).attr('y', 12).attr('text-anchor', 'middle').text(`${spec.colAxis} →`);
    axes.append('text').attr('class', 'axis-title').attr('x', 2).attr('y', TOP - 10).attr('text-anchor', 'start').text(`${spec.rowAxis} ↓`);
    for (let j = 0; j < cols; j++)
      axes.append('text').attr('class', 'tick').attr('x', LEFT + j * CELL + CELL / 2).attr('y', TOP - 10).attr('text-anchor', 'middle').text(j + 1);
    for (let i = 0; i < rows; i++)
      axes.append('text').attr('class', 'tick').attr('x', LEFT - 10).attr('y', TOP + i * CELL + CELL / 2).attr('dy', '0.35em').attr('text-anchor', 'end').text(i + 1);
  }

  private drawLegend(spec: HeatmapSpec, extent: number, fillOf: (x: number) => string): void {
    const barW = 140;
    const swatch = spec.maskedLegend ? 92 : 0;
    const width = barW + 24 + swatch;
    const lg = this.legend.attr('viewBox', `0 0 ${width} 44`).attr('width', width).attr('height', 44);
    lg.selectAll('g.lg, linearGradient').remove();
    const gradId = `${this.id}-grad`;
    const lo = spec.palette === 'unit' ? 0 : -extent;
    const hi = spec.palette === 'unit' ? 1 : extent;
    const grad = lg.select('defs').append('linearGradient').attr('id', gradId);
    for (let s = 0; s <= 10; s++) grad.append('stop').attr('offset', `${s * 10}%`).attr('stop-color', fillOf(lo + ((hi - lo) * s) / 10));
    const g = lg.append('g').attr('class', 'lg').attr('transform', 'translate(8,0)');
    g.append('text').attr('class', 'legend-title').attr('x', 0).attr('y', 11).text(spec.legendTitle);
    g.append('rect').attr('x', 0).attr('y', 16).attr('width', barW).attr('height', 10).attr('rx', 2).attr('fill', `url(#${gradId})`);
    const ticks = [lo, (lo + hi) / 2, hi];
    ticks.forEach((t, k) => {
      const x = (k * barW) / 2;
      g.append('line').attr('x1', x).attr('x2', x).attr('y1', 26).attr('y2', 30).attr('stroke', 'currentColor');
      g.append('text').attr('class', 'tick').attr('x', x).attr('y', 41).attr('text-anchor', k === 0 ? 'start' : k === 2 ? 'end' : 'middle').text(Number(t.toPrecision(3)).toString().replace('-', '\u2212'));
    });
    if (spec.maskedLegend) {
      const m = g.append('g').attr('transform', `translate(${barW + 18},16)`);
      m.append('rect').attr('width', 14).attr('height', 14).attr('rx', 2).attr('fill', `url(#${this.id}-lhatch)`).attr('class', 'masked');
      m.append('text').attr('class', 'tick').attr('x', 20).attr('y', 11).text(spec.maskedLegend);
    }
  }

  private showTooltip(d: Cell): void {
    if (!this.spec) return;
    const plot = this.tooltip.parentElement!;
    const cell = this.svg.select<SVGGElement>(`g.cell[data-i="${d.i}"][data-j="${d.j}"]`).node();
    if (!cell) return;
    this.tooltip.textContent = this.spec.cellLabel(d.i + 1, d.j + 1, this.valueText(d));
    this.tooltip.classList.add('visible');
    const box = cell.getBoundingClientRect();
    const host = plot.getBoundingClientRect();
    const tip = this.tooltip.getBoundingClientRect();
    const left = Math.max(0, Math.min(host.width - tip.width, box.left - host.left + box.width / 2 - tip.width / 2));
    const top = box.top - host.top - tip.height - 6;
    this.tooltip.style.left = `${left}px`;
    this.tooltip.style.top = `${top < 0 ? box.bottom - host.top + 6 : top}px`;
  }

  private hideTooltip(): void {
    this.tooltip.classList.remove('visible');
  }

  private onKey(ev: KeyboardEvent): void {
    if (!this.spec) return;
    const { rows, cols } = this.spec.values;
    let [i, j] = this.focus;
    switch (ev.key) {
      case 'ArrowUp': i = Math.max(0, i - 1); break;
      case 'ArrowDown': i = Math.min(rows - 1, i + 1); break;
      case 'ArrowLeft': j = Math.max(0, j - 1); break;
      case 'ArrowRight': j = Math.min(cols - 1, j + 1); break;
      case 'Home': j = 0; break;
      case 'End': j = cols - 1; break;
      case 'Escape': this.hideTooltip(); return;
      default: return;
    }
    ev.preventDefault();
    this.focus = [i, j];
    const cells = this.svg.selectAll<SVGGElement, Cell>('g.cell');
    cells.attr('tabindex', (d) => (d.i === i && d.j === j ? 0 : -1));
    cells.filter((d) => d.i === i && d.j === j).node()?.focus();
  }
}

function hatchPattern(defs: Selection<SVGDefsElement, unknown, null, undefined>, id: string): void {
  const p = defs
    .append('pattern')
    .attr('id', id)
    .attr('patternUnits', 'userSpaceOnUse')
    .attr('width', 7)
    .attr('height', 7)
    .attr('patternTransform', 'rotate(45)');
  p.append('rect').attr('width', 7).attr('height', 7).attr('class', 'hatch-bg');
  p.append('line').attr('x1', 0).attr('y1', 0).attr('x2', 0).attr('y2', 7).attr('class', 'hatch-line');
}
