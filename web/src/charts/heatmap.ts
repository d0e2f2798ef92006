/**
 * Heatmap of a small matrix (d3): one cell per entry, numbers printed in cells
 * for matrices up to 8 x 8, a legend that is always shown, hatched masked cells,
 * a tooltip on hover and focus, and keyboard focus with arrow keys (one tab stop,
 * roving tabindex), each cell carrying an aria-label readout.
 * Colours, domain, legend ticks, which cells print numbers and keyboard movement come from
 * heatmap-scale.ts, shared with <qk-scope>'s grid; this file draws them as SVG (exportable).
 * A map built with `canvasNumbers` draws its printed cells' colours and numbers on a canvas
 * (heatmap-field.ts), its tick labels on a layer of their own (heatmap-ticks.ts), and keeps unfilled SVG cells
 * in grid units for focus, hover and labels only: its sliders change every number and the cell
 * size at once, which as SVG text and geometry cost a relayout of every cell and tick. Its
 * export (parts) draws it as vector cells and text, as for print.
 * Such maps are redrawn when the device pixel ratio changes (a monitor or a zoom that leaves
 * their width alone would keep a blurry bitmap) and drawn as SVG while the page is printed
 * (vector numbers in print and PDF): see heatmap-canvas-watch.ts.
 * A map built with `steadyBox` keeps its <svg>'s size while its shape changes (heatmap-box.ts).
 */
import { setAttr, setOwnAttr, setText } from './attr';
import { select, type Selection } from 'd3';
import type { RowMajor } from '../model/matrix';
import { fixed } from '../model/format';
import { type Palette, colour, colourRgb, extentOf, moveFocus, showsText } from './heatmap-scale';
import { HeatmapLegend } from './heatmap-legend';
import { HeatmapBox } from './heatmap-box';
import { LabelPass } from './heatmap-labels';
import { joinCells, placeCell } from './heatmap-cells';
import { ColourField, type PrintedCell } from './heatmap-field';
import { drawAxes } from './heatmap-axes';
import { TickLayer } from './heatmap-ticks';
import { placeTooltip } from './heatmap-tooltip';
import { hatchPattern } from './heatmap-hatch';
import { isPrinting, watchCanvasMap } from './heatmap-canvas-watch';
import './heatmap.css';

export type { Palette };

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

const SVG_NS = 'http://www.w3.org/2000/svg';
/** Designed cell size; cells shrink to fit the container down to MIN_CELL (then the SVG scales). */
const CELL = 66;
const MIN_CELL = 18;
/** Cells narrower than this print no number; below SMALL_CELL numbers use the smaller font. */
const TEXT_CELL = 40;
const SMALL_CELL = 54;
/** Width of one printed character in em (tabular digits, minus sign), rounded up. */
const CHAR_EM = 0.6;
const LEFT = 64;
const TOP = 44;
const PAD = 6;
/** Font sizes of printed numbers in CSS px by class (heatmap.css), for numbers drawn on a canvas. */
const FONT_PX = { normal: 13.5, small: 11.5, tiny: 10 } as const;
/** The page's font family (read once: every heatmap inherits it from the root). */
let pageFont = '';
let uid = 0;

export class Heatmap {
  readonly el: HTMLElement;
  private readonly id = `hm${++uid}`;
  private readonly svg: Selection<SVGSVGElement, unknown, null, undefined>;
  /** The div around the <svg>, as large as the map (heatmap-box.ts). */
  private readonly frame: HTMLDivElement;
  private readonly box: HeatmapBox;
  private readonly labels = new LabelPass(() => this.writeLabels());
  private readonly legend: Selection<SVGSVGElement, unknown, null, undefined>;
  private readonly legendDraw: HeatmapLegend;
  private readonly tooltip: HTMLDivElement;
  private focus: [number, number] = [0, 0];
  private spec: HeatmapSpec | null = null;
  /** Cell size of the last drawing, in CSS px (text stays at its CSS size, never scaled down). */
  private cell = CELL;
  private drawnWidth = 0;
  /** Width of the element as last observed (ResizeObserver), so an update never forces a layout. */
  private width = -1;
  /** What the axes were last drawn for (they are redrawn only when it changes). */
  private axesKey = '';
  /** Colours of maps too large to print numbers (created on the first such map). */
  private field: ColourField | null = null;
  /** Called when the pointer or keyboard focus enters a cell (null on leave), to sync other charts. */
  onCellFocus: ((cell: [number, number] | null) => void) | null = null;
  /** Printed maps draw colours and numbers on the canvas too (see the file's comment). */
  private readonly canvasNumbers: boolean;
  /** Set while parts() draws a canvas map as vector cells for export. */
  private vector = false;
  /** A canvas map's tick labels as a layer over its <svg> (heatmap-ticks.ts). */
  private readonly tickLayer = new TickLayer();

  constructor(testId: string, opts: { canvasNumbers?: boolean; steadyBox?: boolean } = {}) {
    this.canvasNumbers = opts.canvasNumbers ?? false;
    this.el = document.createElement('div');
    this.el.className = 'heatmap';
    this.el.dataset.testid = testId;
    const plot = document.createElement('div');
    plot.className = 'heatmap-plot';
    this.frame = document.createElement('div');
    this.frame.className = 'heatmap-frame';
    plot.append(this.frame);
    this.el.append(plot);
    this.svg = select(this.frame).append('svg').attr('class', 'heatmap-svg').attr('role', 'group');
    this.box = new HeatmapBox(this.frame, this.svg.node()!, opts.steadyBox ?? false);
    if (this.canvasNumbers) this.frame.append(this.tickLayer.el);
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
    this.legendDraw = new HeatmapLegend(this.legend, this.id);
    this.svg.on('keydown', (ev: KeyboardEvent) => this.onKey(ev));
    this.svg.on('pointerleave', () => {
      this.hideTooltip();
      this.onCellFocus?.(null);
    });
    // Redraw with cells that fit the new width, so labels keep their size instead of shrinking.
    if (typeof ResizeObserver === 'function') {
      new ResizeObserver(() => {
        this.width = this.measure();
        if (this.spec && Math.abs(this.width - this.drawnWidth) > 2) this.update(this.spec);
      }).observe(this.el);
    }
  }

  /**
   * The chart's SVG elements (plot, then legend), for export, read synchronously by the caller.
   * A canvas map is drawn as vector cells and text for it (as for print), and back on the canvas
   * in a microtask, before the page is painted again.
   */
  parts(): SVGSVGElement[] {
    if (this.canvasNumbers && this.spec && !this.vector) {
      this.vector = true;
      this.update(this.spec);
      this.vector = false;
      queueMicrotask(() => this.redraw());
    }
    return [this.svg.node()!, this.legend.node()!];
  }

  /** Outlines cell (i, j) (0-based) as if hovered, or clears the outline; for synchronized charts. */
  highlight(cell: [number, number] | null): void {
    this.svg.selectAll<SVGGElement, Cell>('g.cell').classed('linked', (d) => cell !== null && d.i === cell[0] && d.j === cell[1]);
  }

  /** Draws the map again as it is (a new device pixel ratio, print). */
  redraw(): void {
    if (this.spec) this.update(this.spec);
  }

  /**
   * The element's width rounded down: clientWidth rounds 437.59 to 438, and the SVG would then
   * be drawn 0.999 times its size (a canvas bitmap off its device pixels).
   */
  private measure(): number {
    return Math.floor(this.el.getBoundingClientRect().width);
  }

  /** Width in CSS pixels at which cells are drawn at their designed size. */
  static naturalWidth(cols: number): number {
    return LEFT + cols * CELL + PAD;
  }

  update(spec: HeatmapSpec): void {
    this.spec = spec;
    const { rows, cols, data } = spec.values;
    const extent = extentOf(spec.palette, data);
    const fillOf = (x: number) => colour(spec.palette, x, extent);
    this.drawnWidth = this.width >= 0 ? this.width : this.measure();
    const avail = this.drawnWidth > 0 ? this.drawnWidth : Heatmap.naturalWidth(cols);
    const CELL = (this.cell = Math.max(MIN_CELL, Math.min(66, Math.floor((avail - LEFT - PAD) / cols))));
    // The font that fits the longest printed number ("−0.183" needs more room than "0.18"):
    // 13.5 px, 11.5 px (small-text) or 10 px (tiny-text); numbers are left out when none fits
    // (they stay in each cell's label and tooltip).
    let longest = 0;
    for (let k = 0; k < data.length; k++) longest = Math.max(longest, fixed(data[k]!, spec.decimals).length);
    const fits = (px: number) => longest * px * CHAR_EM <= CELL - 6;
    const font = CELL >= SMALL_CELL && fits(13.5) ? 'normal' : fits(11.5) ? 'small' : fits(10) ? 'tiny' : 'none';
    const showText = showsText(rows, cols) && CELL >= TEXT_CELL && font !== 'none';
    // Too large to print numbers: colours go on one canvas (heatmap-field.ts) and the cells,
    // transparent, sit in grid units in one scaled group, so a new cell size or new values
    // rewrite no cell geometry and repaint no cell. A canvas map (canvasNumbers) draws its
    // printed cells on a canvas too and keeps its cells in grid units the same way: a shape
    // slider then rewrites one transform, not every cell's (native/bench/NOTES.md, "Sliders,
    // twelfth pass").
    const large = !showsText(rows, cols);
    const onCanvas = this.canvasNumbers && !isPrinting() && !this.vector;
    const printedCanvas = onCanvas && !large;
    const grid = large || printedCanvas;
    if (this.canvasNumbers) watchCanvasMap(this);
    const width = LEFT + cols * CELL + PAD;
    const height = TOP + rows * CELL + PAD;
    this.focus = [Math.min(this.focus[0], rows - 1), Math.min(this.focus[1], cols - 1)];

    // Written only when changed: any attribute write on the <svg> (even the same value)
    // makes the browser re-lay-out and repaint the whole map.
    const root = this.svg.node()!;
    const scale = this.box.size(width, height, avail);
    setAttr(root, 'aria-label', spec.label);
    if (root.classList.contains('small-text') !== (font === 'small')) root.classList.toggle('small-text', font === 'small');
    if (root.classList.contains('tiny-text') !== (font === 'tiny')) root.classList.toggle('tiny-text', font === 'tiny');
    if (root.classList.contains('large') !== large) root.classList.toggle('large', large);
    if (root.classList.contains('canvas-numbers') !== printedCanvas) root.classList.toggle('canvas-numbers', printedCanvas);
    // The tick layer only at the map's own size: a map scaled down to fit keeps its SVG ticks,
    // which scale with it (the layer would need the fractional scale the <svg> is drawn at).
    const layerTicks = onCanvas && scale === 1;
    if (root.classList.contains('layer-ticks') !== layerTicks) root.classList.toggle('layer-ticks', layerTicks);
    this.tickLayer.show(layerTicks);
    if (layerTicks) this.tickLayer.draw({ rows, cols, cell: CELL, left: LEFT, top: TOP });
    setAttr(root, 'data-rows', String(rows));
    setAttr(root, 'data-cols', String(cols));

    this.drawAxes(rows, cols, spec, !layerTicks);

    const cells: Cell[] = [];
    for (let i = 0; i < rows; i++)
      for (let j = 0; j < cols; j++)
        cells.push({ i, j, value: data[i * cols + j]!, masked: spec.masked?.(i, j) ?? false });

    const hatch = `url(#${this.id}-hatch)`;
    const self = this;
    const groupNode = this.svg.select<SVGGElement>('g.cells').node()!;
    if (grid) this.field ??= new ColourField(root, groupNode, hatch);
    if (grid) {
      setAttr(groupNode, 'transform', `translate(${LEFT},${TOP}) scale(${CELL})`);
    } else if (groupNode.hasAttribute('transform')) {
      groupNode.removeAttribute('transform');
    }
    this.field?.show(grid);
    const printed: PrintedCell[] = new Array(printedCanvas ? rows * cols : 0);
    const nodes = joinCells(groupNode, cells, rows, cols, () => this.makeCell());

    // Only what changed is written: a dragged slider changes values, rarely the layout.
    const active = document.activeElement;
    let labelsDue = false;
    const drawCell = function (this: SVGGElement, d: Cell) {
      setOwnAttr(this, 'tabindex', d.i === self.focus[0] && d.j === self.focus[1] ? '0' : '-1');
      setOwnAttr(this, 'data-value', String(d.value));
      // A class, not a [data-value] selector, for NaN cells (chapter 5): an attribute selector
      // in any stylesheet restyles every cell whose value changes (~2.8 ms per 256 cells).
      const nan = Number.isNaN(d.value);
      if (this.classList.contains('nan') !== nan) this.classList.toggle('nan', nan);
      setOwnAttr(this, 'data-masked', String(d.masked));
      // Labels after the frame (heatmap-labels.ts), the focused cell's now.
      if (this === active) setOwnAttr(this, 'aria-label', spec.cellLabel(d.i + 1, d.j + 1, self.valueText(d)));
      else labelsDue = true;
      placeCell(this, d.i, d.j, grid ? null : { cell: CELL, left: LEFT, top: TOP });
      if (large) return;
      const rect = this.firstElementChild as SVGRectElement;
      const text = rect.nextElementSibling as SVGTextElement;
      const value = fillOf(d.value);
      const shown = !showText || d.masked ? '' : fixed(d.value, spec.decimals);
      if (printedCanvas) {
        // The canvas paints fill, number and hatch; the cell keeps its label and the pointer.
        printed[d.i * cols + d.j] = { fill: value.fill, ink: value.ink, text: shown, masked: d.masked };
        return;
      }
      if (rect.classList.contains('masked') !== d.masked) rect.classList.toggle('masked', d.masked);
      setText(text, shown);
      setOwnAttr(rect, 'fill', d.masked ? hatch : value.fill);
      setOwnAttr(text, 'fill', d.masked ? 'currentColor' : value.ink);
    };
    for (let k = 0; k < nodes.length; k++) drawCell.call(nodes[k]!, cells[k]!);

    if (labelsDue) this.labels.schedule();
    if (printedCanvas) {
      pageFont ||= getComputedStyle(document.documentElement).fontFamily;
      const px = font === 'none' ? FONT_PX.tiny : FONT_PX[font];
      this.field!.drawPrinted(rows, cols, CELL, LEFT, TOP, printed, { px, css: `500 ${px}px ${pageFont}` }, window.devicePixelRatio || 1);
    } else if (large) {
      this.field!.draw(rows, cols, CELL, LEFT, TOP, (k) => colourRgb(spec.palette, data[k]!, extent), cells.map((c) => c.masked));
    }
    this.legendDraw.draw(spec, extent);
  }

  /** A new cell: a rect and a text in a group, its listeners reading its datum (heatmap-cells.ts). */
  private makeCell(): SVGGElement {
    const g = document.createElementNS(SVG_NS, 'g');
    g.setAttribute('class', 'cell');
    g.setAttribute('role', 'img');
    const text = document.createElementNS(SVG_NS, 'text');
    text.setAttribute('dy', '0.35em');
    text.setAttribute('text-anchor', 'middle');
    g.append(document.createElementNS(SVG_NS, 'rect'), text);
    const datum = () => (g as unknown as { __data__: Cell }).__data__;
    g.addEventListener('pointerenter', () => {
      const d = datum();
      this.showTooltip(d);
      this.onCellFocus?.([d.i, d.j]);
    });
    g.addEventListener('focus', () => {
      const d = datum();
      this.labels.flush();
      this.focus = [d.i, d.j];
      this.showTooltip(d);
      this.onCellFocus?.([d.i, d.j]);
    });
    g.addEventListener('blur', () => {
      this.hideTooltip();
      this.onCellFocus?.(null);
    });
    return g;
  }

  /** Every cell's aria-label from its data and the current spec (the label pass). */
  private writeLabels(): void {
    const spec = this.spec;
    if (!spec) return;
    const self = this;
    this.svg.select('g.cells').selectAll<SVGGElement, Cell>('g.cell').each(function (d) {
      setOwnAttr(this, 'aria-label', spec.cellLabel(d.i + 1, d.j + 1, self.valueText(d)));
    });
  }

  private valueText(d: Cell): string {
    if (!this.spec) return '';
    return d.masked ? `${this.spec.maskedText} (${fixed(d.value, this.spec.decimals)})` : fixed(d.value, this.spec.decimals);
  }

  /** The axes; `ticks` false leaves the SVG tick labels as they are (hidden: the tick layer is shown). */
  private drawAxes(rows: number, cols: number, spec: HeatmapSpec, ticks: boolean): void {
    const CELL = this.cell;
    const key = [rows, cols, CELL, spec.rowAxis, spec.colAxis, ticks].join('\u0000');
    if (key === this.axesKey) return;
    this.axesKey = key;
    drawAxes(this.svg.select<SVGGElement>('g.axes').node()!, { rows, cols, cell: CELL, left: LEFT, top: TOP, rowAxis: spec.rowAxis, colAxis: spec.colAxis, ticks });
  }

  private showTooltip(d: Cell): void {
    if (!this.spec) return;
    const cell = this.svg.select<SVGGElement>(`g.cell[data-i="${d.i}"][data-j="${d.j}"]`).node();
    if (!cell) return;
    this.tooltip.textContent = this.spec.cellLabel(d.i + 1, d.j + 1, this.valueText(d));
    this.tooltip.classList.add('visible');
    placeTooltip(this.tooltip, cell, this.frame);
  }

  private hideTooltip(): void {
    this.tooltip.classList.remove('visible');
  }

  private onKey(ev: KeyboardEvent): void {
    if (!this.spec) return;
    const { rows, cols } = this.spec.values;
    if (ev.key === 'Escape') return this.hideTooltip();
    const to = moveFocus(ev.key, this.focus[0], this.focus[1], rows, cols);
    if (!to) return;
    const [i, j] = to;
    ev.preventDefault();
    this.focus = [i, j];
    const cells = this.svg.selectAll<SVGGElement, Cell>('g.cell');
    // setOwnAttr, as update() writes it (the value is remembered there).
    cells.each(function (d) {
      setOwnAttr(this, 'tabindex', d.i === i && d.j === j ? '0' : '-1');
    });
    cells.filter((d) => d.i === i && d.j === j).node()?.focus();
  }
}
