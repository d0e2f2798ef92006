/**
 * A heatmap's legend (heatmap.ts): the colour bar with its title and three ticks, and the
 * "masked" swatch when asked for. Drawn again only when what it shows changes.
 */
import type { Selection } from 'd3';
import { setSvgLabel } from './label';
import { type Palette, legendScale } from './heatmap-scale';

export interface LegendSpec {
  palette: Palette;
  legendTitle: string;
  maskedLegend?: string;
}

export class HeatmapLegend {
  /** What the legend was last drawn for. */
  private key = '';

  /** `legend` is the legend's <svg> (with a <defs>); `id` the map's id prefix (gradient and hatch ids). */
  constructor(private readonly legend: Selection<SVGSVGElement, unknown, null, undefined>, private readonly id: string) {}

  draw(spec: LegendSpec, extent: number): void {
    const barW = 140;
    const swatch = spec.maskedLegend ? 92 : 0;
    const width = barW + 24 + swatch;
    const { stops, ticks } = legendScale(spec.palette, extent, 10);
    const key = [spec.palette, spec.legendTitle, spec.maskedLegend ?? '', ...stops, ...ticks].join('\u0000');
    if (key === this.key) return;
    this.key = key;
    const lg = this.legend.attr('viewBox', `0 0 ${width} 44`).attr('width', width).attr('height', 44);
    lg.selectAll('g.lg, linearGradient').remove();
    const gradId = `${this.id}-grad`;
    const grad = lg.select('defs').append('linearGradient').attr('id', gradId);
    stops.forEach((c, s) => grad.append('stop').attr('offset', `${s * 10}%`).attr('stop-color', c));
    const g = lg.append('g').attr('class', 'lg').attr('transform', 'translate(8,0)');
    g.append('text').attr('class', 'legend-title').attr('x', 0).attr('y', 11).each(function () {
      setSvgLabel(this, spec.legendTitle);
    });
    g.append('rect').attr('x', 0).attr('y', 16).attr('width', barW).attr('height', 10).attr('rx', 2).attr('fill', `url(#${gradId})`);
    ticks.forEach((t, k) => {
      const x = (k * barW) / 2;
      g.append('line').attr('x1', x).attr('x2', x).attr('y1', 26).attr('y2', 30).attr('stroke', 'currentColor');
      g.append('text').attr('class', 'tick').attr('x', x).attr('y', 41).attr('text-anchor', k === 0 ? 'start' : k === 2 ? 'end' : 'middle').text(t);
    });
    if (spec.maskedLegend) {
      const m = g.append('g').attr('transform', `translate(${barW + 18},16)`);
      m.append('rect').attr('width', 14).attr('height', 14).attr('rx', 2).attr('fill', `url(#${this.id}-lhatch)`).attr('class', 'masked');
      m.append('text').attr('class', 'tick').attr('x', 20).attr('y', 11).text(spec.maskedLegend);
    }
  }
}
