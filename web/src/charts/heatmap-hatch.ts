/** The diagonal hatch that fills masked and NaN cells of the heatmap and its legend (heatmap.ts). */
import type { Selection } from 'd3';

export function hatchPattern(defs: Selection<SVGDefsElement, unknown, null, undefined>, id: string): void {
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
