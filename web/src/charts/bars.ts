/**
 * Grouped bar chart (d3): categories along x, one bar per series in each group, y linear
 * or log, a legend inside the SVG, and keyboard-focusable bars with aria-labels.
 *
 *   const b = new BarChart('c7-cost');
 *   b.update({ label: 'Time per call', categories: ['128', '512'], x: { label: 'L' }, y: { label: 'ms', scale: 'log' },
 *     series: [{ id: 'naive', label: 'naive', values: [0.1, 1.6] }, { id: 'fused', label: 'fused', values: [0.05, 0.4] }] });
 */
import { axisBottom, axisLeft, scaleBand, scaleLinear, scaleLog } from 'd3';
import { type AxisSpec, MARGIN, type Mark, XYChart, defaultFormat } from './xy';

export interface BarSeries {
  id: string;
  label: string;
  /** One value per category (NaN or null = no bar). */
  values: (number | null)[];
  color?: number;
}

export interface BarSpec {
  label: string;
  categories: string[];
  x: { label: string };
  y: AxisSpec;
  series: BarSeries[];
  height?: number;
  barLabel?: (s: BarSeries, category: string, value: number) => string;
}

/** What the frame of a drawing depends on besides the width: legend, axes, scales and ticks (functions are not compared). */
function frameKey(spec: BarSpec, top: number, lo: number, hi: number, yt: number[]): string {
  return JSON.stringify([spec.height ?? 300, top, spec.categories, spec.series.map((s) => [s.id, s.label, s.color]), spec.x.label, spec.y.label, spec.y.scale, lo, hi, yt]);
}

export class BarChart extends XYChart<BarSpec> {
  /** The legend's height and the frame key of the last drawing: a new spec with the same frame moves its bars in place. */
  private legendTop = 0;
  private drawnKey = '';

  /** Scales and ticks for `spec` under a legend of height `top`. */
  private scales(spec: BarSpec, width: number, top: number) {
    const height = spec.height ?? 300;
    const left = MARGIN.left;
    const right = width - MARGIN.right;
    const bottom = height - MARGIN.bottom;
    const log = spec.y.scale === 'log';
    const vals = spec.series.flatMap((s) => s.values).filter((v): v is number => v !== null && Number.isFinite(v) && (!log || v > 0));
    const hi = spec.y.domain?.[1] ?? Math.max(...vals, log ? 10 : 1);
    const lo = spec.y.domain?.[0] ?? (log ? Math.min(...vals, hi / 10) : Math.min(0, ...vals));
    const y = log ? scaleLog().domain([lo, hi]).range([bottom, top + 6]).nice() : scaleLinear().domain([lo, hi]).range([bottom, top + 6]).nice();
    const x0 = scaleBand().domain(spec.categories).range([left, right]).paddingInner(0.2).paddingOuter(0.1);
    const x1 = scaleBand().domain(spec.series.map((s) => s.id)).range([0, x0.bandwidth()]).padding(0.08);
    const yt = spec.y.ticks ?? (y.ticks(5) as number[]).filter((_, k, a) => !log || a.length <= 6 || k % Math.ceil(a.length / 6) === 0);
    const [d0, d1] = y.domain() as [number, number];
    return { height, left, right, bottom, log, lo, y, x0, x1, yt, key: frameKey(spec, top, d0, d1, yt) };
  }

  /** The focusable bars of `spec` on the given scales. */
  private barsOf(spec: BarSpec, S: ReturnType<BarChart['scales']>): Mark[] {
    const { log, lo, y, x0, x1, bottom } = S;
    const fy = spec.y.format ?? defaultFormat;
    const base = log ? bottom : y(Math.max(lo, 0));
    const marks: Mark[] = [];
    spec.series.forEach((s, si) => {
      s.values.forEach((v, k) => {
        const cat = spec.categories[k];
        if (cat === undefined || v === null || !Number.isFinite(v) || (log && v <= 0)) return;
        const yy = y(v);
        const label = spec.barLabel ? spec.barLabel(s, cat, v) : `${s.label}, ${spec.x.label} = ${cat}: ${fy(v)}`;
        marks.push({ x: x0(cat)! + x1(s.id)!, y: Math.min(yy, base), w: x1.bandwidth(), h: Math.abs(base - yy), s: si, k, color: s.color ?? si, label, shape: 'rect' });
      });
    });
    return marks;
  }

  /**
   * New values on the frame drawn (same legend, axes, scales and ticks: a dragged slider with
   * a fixed y domain): the bars move in place, nothing else is rebuilt.
   */
  protected patch(_prev: BarSpec, next: BarSpec): boolean {
    if (!this.drawnKey) return false;
    const S = this.scales(next, this.width, this.legendTop);
    if (S.key !== this.drawnKey) return false;
    this.moveMarks(this.barsOf(next, S), next.label);
    return true;
  }

  protected draw(spec: BarSpec, width: number): void {
    const top = MARGIN.top + this.legend(spec.series.map((s, k) => ({ label: s.label, color: s.color ?? k, kind: 'box' as const })), width);
    const S = this.scales(spec, width, top);
    const { height, left, right, bottom, y, x0, yt } = S;
    this.legendTop = top;
    this.drawnKey = S.key;
    this.svg.attr('viewBox', `0 0 ${width} ${height}`).attr('width', width).attr('height', height);
    const fy = spec.y.format ?? defaultFormat;

    this.svg.append('g').attr('class', 'grid').selectAll('line').data(yt).join('line')
      .attr('x1', left).attr('x2', right).attr('y1', (v) => y(v)).attr('y2', (v) => y(v));
    this.svg.append('g').attr('class', 'axis x').attr('transform', `translate(0,${bottom})`).call(axisBottom(x0).tickSizeOuter(0));
    this.svg.append('g').attr('class', 'axis y').attr('transform', `translate(${left},0)`)
      .call(axisLeft(y).tickValues(yt).tickFormat((v) => fy(Number(v))).tickSizeOuter(0));
    this.axisTitles(spec.x.label, spec.y.label, left, right, top, bottom);
    this.setMarks(this.barsOf(spec, S), spec.label);
  }
}
