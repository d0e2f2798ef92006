/**
 * Colour scales of <qk-scope> without d3 (no DOM): viridis for weights in [0, 1]
 * (sequential, perceptually uniform) and RdBu reversed for signed values on a
 * symmetric extent (diverging, centred on 0). Both colour-blind safe. Stops are
 * sampled from d3-scale-chromatic's interpolateViridis / interpolateRdBu.
 */
const VIRIDIS = ['#440154', '#482878', '#3e4989', '#31688e', '#26828e', '#1f9e89', '#35b779', '#6ece58', '#b5de2b', '#fde725'];
const RDBU_R = ['#053061', '#2166ac', '#4393c3', '#92c5de', '#d1e5f0', '#f7f7f7', '#fddbc7', '#f4a582', '#d6604d', '#b2182b', '#67001f'];

function hex(c: string): [number, number, number] {
  return [parseInt(c.slice(1, 3), 16), parseInt(c.slice(3, 5), 16), parseInt(c.slice(5, 7), 16)];
}

function ramp(stops: readonly string[], t: number): [number, number, number] {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const a = hex(stops[i]!);
  const b = hex(stops[i + 1]!);
  const f = x - i;
  return [0, 1, 2].map((k) => Math.round(a[k]! + (b[k]! - a[k]!) * f)) as [number, number, number];
}

export type Palette = 'unit' | 'diverging';

/** Fill and readable ink for a value under a palette; `extent` is the symmetric range of 'diverging'. */
export function colour(palette: Palette, x: number, extent: number): { fill: string; ink: string } {
  const rgb = palette === 'unit' ? ramp(VIRIDIS, x) : ramp(RDBU_R, (x / (extent || 1) + 1) / 2);
  const lin = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
  const lum = 0.2126 * lin(rgb[0]) + 0.7152 * lin(rgb[1]) + 0.0722 * lin(rgb[2]);
  return { fill: `rgb(${rgb.join(',')})`, ink: lum > 0.3 ? '#111' : '#fff' };
}

/** Largest finite |x| (1 when none), for the diverging palette. */
export function extentOf(xs: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < xs.length; i++) if (Number.isFinite(xs[i]!)) m = Math.max(m, Math.abs(xs[i]!));
  return m || 1;
}
