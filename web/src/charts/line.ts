/**
 * Line chart (d3): one or more series y(x) on linear or log axes, with markers, dashes for
 * reference curves, an optional vertical rule (e.g. the slider's current value), a legend
 * inside the SVG, and keyboard-focusable points with aria-labels.
 *
 *   const c = new LineChart('c3-variance');
 *   c.update({ label: 'Variance vs d', x: { label: 'd', scale: 'log' }, y: { label: 'variance', scale: 'log' },
 *     series: [{ id: 'raw', label: 'q·k', points: [{ x: 16, y: 15.8 }, ...] }] });
 */
import { axisBottom, axisLeft, line as d3line, scaleLinear, scaleLog } from 'd3';
import { setAttr } from './attr';
import { type AxisSpec, MARGIN, type Mark, XYChart, defaultFormat, textWidth } from './xy';

export interface LineSeries {
  id: string;
  label: string;
  points: { x: number; y: number }[];
  /** Colour index 0..6 (default: the series' position). */
  color?: number;
  dashed?: boolean;
  /** Draw focusable points (default true). */
  markers?: boolean;
}

export interface LineSpec {
  /** Accessible name of the chart. */
  label: string;
  x: AxisSpec;
  y: AxisSpec;
  series: LineSeries[];
  height?: number;
  /** A vertical rule at x, with a short label at the top of the plot (or the bottom, away from lines near the top). */
  marker?: { x: number; label: string; at?: 'top' | 'bottom' };
  /** aria-label / tooltip of a point (default "series: x = …, y = …"). */
  pointLabel?: (s: LineSeries, p: { x: number; y: number }) => string;
}

/** The axis scale; `nice` widens a linear or y range to round ends (never an x range on log axes, which would run past the data). */
function scaleOf(axis: AxisSpec, values: number[], range: [number, number], nice = true) {
  const log = axis.scale === 'log';
  const finite = values.filter((v) => Number.isFinite(v) && (!log || v > 0));
  let lo = axis.domain?.[0] ?? Math.min(...finite);
  let hi = axis.domain?.[1] ?? Math.max(...finite);
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) [lo, hi] = log ? [1, 10] : [0, 1];
  if (lo === hi) [lo, hi] = log ? [lo / 2, hi * 2] : [lo - 1, hi + 1];
  if (log) {
    const s = scaleLog().domain([lo, hi]).range(range);
    return axis.domain || !nice ? s : s.nice();
  }
  const s = scaleLinear().domain([lo, hi]).range(range);
  return axis.domain ? s : s.nice();
}

/** Tick values: the given ones, else a few round ones (powers for log axes). */
function ticksOf(axis: AxisSpec, scale: ReturnType<typeof scaleOf>, count: number): number[] {
  if (axis.ticks) {
    const [a, b] = scale.domain() as [number, number];
    return axis.ticks.filter((v) => v >= Math.min(a, b) * (1 - 1e-9) && v <= Math.max(a, b) * (1 + 1e-9));
  }
  if (axis.scale === 'log') {
    const [lo, hi] = scale.domain() as [number, number];
    const out: number[] = [];
    const span = Math.log10(hi) - Math.log10(lo);
    const mult = span <= 1.2 ? [1, 2, 5] : [1];
    for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++)
      for (const m of mult) {
        const v = m * 10 ** e;
        if (v >= lo * 0.999 && v <= hi * 1.001) out.push(Number(v.toPrecision(6)));
      }
    return out.length >= 2 ? out : (scale.ticks(count) as number[]);
  }
  return scale.ticks(count) as number[];
}

/** The spec without its points, marker and series labels (functions are not compared: a chart's label functions do not change between updates): what the axis titles and line styles were drawn for. */
const drawnStyle = (spec: LineSpec) => JSON.stringify({ ...spec, marker: null, series: spec.series.map((s) => ({ ...s, points: null, label: null })) });

export class LineChart extends XYChart<LineSpec> {
  /** Where the last drawing put the plot (the marker is drawn in it). */
  private frame: { x: (v: number) => number; top: number; bottom: number; right: number } | null = null;
  /** The scales, ticks and margins of the last drawing: when a new spec gives the same, its points move in place. */
  private layoutKey = '';
  /** The legend's height in the last drawing. */
  private legendTop = 0;

  /**
   * In place whenever only points, the marker or series labels of the same legend width changed
   * and the layout they give is the one drawn: live curves of a training run on fixed axes, a
   * moved marker, a dragged slider's points inside unchanged axes, a legend naming the slider's
   * value ("g = 1, r = 2" -> "g = 2, r = 2": the same places, new text).
   */
  protected patch(prev: LineSpec, next: LineSpec): boolean {
    if (this.frame === null || prev.series.length !== next.series.length || drawnStyle(prev) !== drawnStyle(next)) return false;
    const labels = next.series.map((s) => s.label);
    const relabel = labels.some((l, k) => l !== prev.series[k]!.label);
    // The legend's places come from textWidth (xy.ts legend()): equal widths, equal places.
    if (relabel && labels.some((l, k) => textWidth(l) !== textWidth(prev.series[k]!.label))) return false;
    if (!this.movePoints(next)) return false;
    if (relabel) this.relabelLegend(labels);
    return true;
  }

  /**
   * Same legend, styles, scales, ticks and margins as drawn (a dragged slider moving the
   * points inside fixed or unchanged axes): rewrites each line's path, moves the marks and
   * redraws the marker; nothing else is touched. False when the layout differs (rebuild).
   */
  private movePoints(next: LineSpec): boolean {
    const L = this.layout(next, this.width, this.legendTop);
    if (L.key !== this.layoutKey) return false;
    const { ok, path } = this.plotters(L.x, L.y);
    const paths = this.svg.selectAll<SVGPathElement, unknown>('g.lines path.line').nodes();
    if (paths.length !== next.series.length) return false;
    next.series.forEach((s, k) => setAttr(paths[k]!, 'd', path(s.points) ?? ''));
    this.frame = { x: L.x, top: L.top, bottom: L.bottom, right: L.right };
    this.moveMarks(this.marksOf(next, L.x, L.y, ok, L.left, L.right), next.label);
    this.svg.select('g.rule').remove();
    if (next.marker) this.drawMarker(next.marker);
    return true;
  }

  private drawMarker(marker: NonNullable<LineSpec['marker']>): void {
    const { x, top, bottom, right } = this.frame!;
    const mx = x(marker.x);
    if (!Number.isFinite(mx)) return;
    const g = this.svg.insert('g', 'defs').attr('class', 'rule');
    g.append('line').attr('class', 's-6').attr('x1', mx).attr('x2', mx).attr('y1', top).attr('y2', bottom).attr('stroke-dasharray', '2 3');
    g.append('text').attr('x', Math.min(right - 4, mx + 4)).attr('y', marker.at === 'bottom' ? bottom - 6 : top + 12).attr('text-anchor', mx + 4 > right - 60 ? 'end' : 'start').text(marker.label);
  }

  /** Where everything goes for `spec` at `width` (the legend's height is measured by drawing it). */
  private layout(spec: LineSpec, width: number, top: number) {
    const height = spec.height ?? 300;
    const right = width - MARGIN.right;
    const bottom = height - MARGIN.bottom;
    const xs = spec.series.flatMap((s) => s.points.map((p) => p.x));
    const ys = spec.series.flatMap((s) => s.points.map((p) => p.y));
    const y = scaleOf(spec.y, ys, [bottom, top + 6]);
    const fy = spec.y.format ?? defaultFormat;
    const yt = ticksOf(spec.y, y, 5);
    // Room for the widest y tick label plus the rotated axis title, so the title never sits on a tick.
    const left = Math.max(MARGIN.left, 34 + Math.max(0, ...yt.map((v) => textWidth(fy(v)) * 0.92)));
    const x = scaleOf(spec.x, spec.marker ? [...xs, spec.marker.x] : xs, [left, right], spec.x.scale !== 'log');
    const xt = ticksOf(spec.x, x, Math.max(2, Math.floor((right - left) / 80)));
    const key = JSON.stringify([height, top, left, x.domain(), y.domain(), xt, yt]);
    return { height, top, right, bottom, left, x, y, xt, yt, key };
  }

  protected draw(spec: LineSpec, width: number): void {
    const top = MARGIN.top + this.legend(spec.series.map((s, k) => ({ label: s.label, color: s.color ?? k, dashed: s.dashed, kind: 'line' as const })), width);
    this.legendTop = top;
    const { height, right, bottom, left, x, y, xt, yt, key } = this.layout(spec, width, top);
    this.layoutKey = key;
    this.svg.attr('viewBox', `0 0 ${width} ${height}`).attr('width', width).attr('height', height);
    const fx = spec.x.format ?? defaultFormat;
    const fy = spec.y.format ?? defaultFormat;

    this.svg.append('g').attr('class', 'grid').selectAll('line').data(yt).join('line')
      .attr('x1', left).attr('x2', right).attr('y1', (v) => y(v)).attr('y2', (v) => y(v));
    this.svg.append('g').attr('class', 'axis x').attr('transform', `translate(0,${bottom})`)
      .call(axisBottom(x).tickValues(xt).tickFormat((v) => fx(Number(v))).tickSizeOuter(0));
    this.svg.append('g').attr('class', 'axis y').attr('transform', `translate(${left},0)`)
      .call(axisLeft(y).tickValues(yt).tickFormat((v) => fy(Number(v))).tickSizeOuter(0));
    this.axisTitles(spec.x.label, spec.y.label, left, right, top, bottom);

    this.frame = { x, top, bottom, right };
    if (spec.marker) this.drawMarker(spec.marker);

    // Lines stay inside the plot area (reference lines may run past the axes).
    const clip = `${this.id}-clip`;
    this.svg.append('defs').append('clipPath').attr('id', clip).append('rect')
      .attr('x', left).attr('y', top).attr('width', Math.max(0, right - left)).attr('height', Math.max(0, bottom - top));
    const lines = this.svg.append('g').attr('class', 'lines').attr('clip-path', `url(#${clip})`);
    const { ok, path } = this.plotters(x, y);
    spec.series.forEach((s, si) => {
      lines.append('path').attr('class', `line s-${s.color ?? si}`).attr('d', path(s.points) ?? '').attr('stroke-dasharray', s.dashed ? '6 4' : null).attr('data-series', s.id);
    });
    this.setMarks(this.marksOf(spec, x, y, ok, left, right), spec.label);
  }

  private plotters(x: (v: number) => number, y: (v: number) => number) {
    const ok = (p: { x: number; y: number }) => Number.isFinite(x(p.x)) && Number.isFinite(y(p.y));
    const path = d3line<{ x: number; y: number }>().defined(ok).x((p) => x(p.x)).y((p) => y(p.y));
    return { ok, path };
  }

  /** The focusable points of every series with markers. */
  private marksOf(spec: LineSpec, x: (v: number) => number, y: (v: number) => number, ok: (p: { x: number; y: number }) => boolean, left: number, right: number): Mark[] {
    const fx = spec.x.format ?? defaultFormat;
    const fy = spec.y.format ?? defaultFormat;
    const marks: Mark[] = [];
    spec.series.forEach((s, si) => {
      if (s.markers === false) return;
      s.points.forEach((p, k) => {
        if (!ok(p) || x(p.x) < left - 1 || x(p.x) > right + 1) return;
        const label = spec.pointLabel ? spec.pointLabel(s, p) : `${s.label}: ${spec.x.label} = ${fx(p.x)}, ${spec.y.label} = ${fy(p.y)}`;
        marks.push({ x: x(p.x), y: y(p.y), s: si, k, color: s.color ?? si, label, shape: 'circle' });
      });
    });
    return marks;
  }
}
