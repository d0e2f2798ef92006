/**
 * The heatmap's scales and behaviour, shared by the tutorial's SVG heatmap (charts/heatmap.ts)
 * and <qk-scope>'s grid (widget/grid.ts), without d3 and without DOM, so the widget stays
 * small: colours, text colour, the domain, legend ticks, which cells print numbers, and
 * keyboard movement between cells.
 * Palettes: 'unit' = viridis on the fixed domain [0, 1] (weights; sequential, perceptually
 * uniform); 'diverging' = RdBu reversed on a symmetric domain centred at 0 (signed scores).
 * Both colour-blind safe; stops sampled from d3-scale-chromatic's interpolateViridis and
 * interpolateRdBu.
 */
import { sig } from '../model/format';

export type Palette = 'unit' | 'diverging';

const VIRIDIS = ['#440154', '#482878', '#3e4989', '#31688e', '#26828e', '#1f9e89', '#35b779', '#6ece58', '#b5de2b', '#fde725'];
const RDBU_R = ['#053061', '#2166ac', '#4393c3', '#92c5de', '#d1e5f0', '#f7f7f7', '#fddbc7', '#f4a582', '#d6604d', '#b2182b', '#67001f'];

/** Matrices up to this many rows and columns print their numbers in the cells. */
export const MAX_TEXT = 8;

function hex(c: string): [number, number, number] {
  return [parseInt(c.slice(1, 3), 16), parseInt(c.slice(3, 5), 16), parseInt(c.slice(5, 7), 16)];
}

/** The stops as bytes, parsed once: a slider redraws every cell's colour on each input. */
const VIRIDIS_RGB = VIRIDIS.map(hex);
const RDBU_R_RGB = RDBU_R.map(hex);

function ramp(stops: readonly (readonly number[])[], t: number): [number, number, number] {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const a = stops[i]!;
  const b = stops[i + 1]!;
  const f = x - i;
  return [Math.round(a[0]! + (b[0]! - a[0]!) * f), Math.round(a[1]! + (b[1]! - a[1]!) * f), Math.round(a[2]! + (b[2]! - a[2]!) * f)];
}

/** The fill of a value as [r, g, b] bytes (what `colour` writes as rgb(...)); for pixels drawn on a canvas. */
export function colourRgb(palette: Palette, x: number, extent: number): [number, number, number] {
  return palette === 'unit' ? ramp(VIRIDIS_RGB, x) : ramp(RDBU_R_RGB, (Math.min(extent, Math.max(-extent, x)) / (extent || 1) + 1) / 2);
}

/**
 * Fill and readable ink for a value; `extent` is the symmetric domain of 'diverging'. The ink
 * is black or white, whichever contrasts more (WCAG 2 relative luminance): with pure black
 * and white the worse of the two is never below 4.58:1, so every fill meets 4.5:1.
 */
export function colour(palette: Palette, x: number, extent: number): { fill: string; ink: string } {
  const rgb = colourRgb(palette, x, extent);
  const lin = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
  const lum = 0.2126 * lin(rgb[0]) + 0.7152 * lin(rgb[1]) + 0.0722 * lin(rgb[2]);
  return { fill: `rgb(${rgb.join(',')})`, ink: (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) ? '#000' : '#fff' };
}

/** The domain's half-width: 1 for 'unit'; for 'diverging' the largest finite |x| rounded up to a nice step (1 when none). */
export function extentOf(palette: Palette, values: ArrayLike<number>): number {
  if (palette === 'unit') return 1;
  let m = 0;
  for (let k = 0; k < values.length; k++) if (Number.isFinite(values[k]!)) m = Math.max(m, Math.abs(values[k]!));
  if (m === 0) return 1;
  // About four ticks over [-m, m], steps of 1, 2 or 5 times a power of ten (as d3's nice()).
  const raw = m / 2;
  const p = 10 ** Math.floor(Math.log10(raw));
  const e = raw / p;
  const step = p * (e >= Math.sqrt(50) ? 10 : e >= Math.sqrt(10) ? 5 : e >= Math.SQRT2 ? 2 : 1);
  return Math.ceil(m / step - 1e-9) * step;
}

/** The legend: its end values, `n` + 1 colour stops from low to high, and the tick texts (low, middle, high). */
export function legendScale(palette: Palette, extent: number, n = 10): { lo: number; hi: number; stops: string[]; ticks: string[] } {
  const lo = palette === 'unit' ? 0 : -extent;
  const hi = palette === 'unit' ? 1 : extent;
  const stops = Array.from({ length: n + 1 }, (_, s) => colour(palette, lo + ((hi - lo) * s) / n, extent).fill);
  return { lo, hi, stops, ticks: [lo, (lo + hi) / 2, hi].map((t) => sig(t, 3)) };
}

/** Whether cells print their numbers (small matrices only; larger ones show them on hover and focus). */
export function showsText(rows: number, cols: number): boolean {
  return rows <= MAX_TEXT && cols <= MAX_TEXT;
}

/** The cell a key moves focus to (arrows, Home, End), or null for other keys. */
export function moveFocus(key: string, i: number, j: number, rows: number, cols: number): [number, number] | null {
  switch (key) {
    case 'ArrowUp': return [Math.max(0, i - 1), j];
    case 'ArrowDown': return [Math.min(rows - 1, i + 1), j];
    case 'ArrowLeft': return [i, Math.max(0, j - 1)];
    case 'ArrowRight': return [i, Math.min(cols - 1, j + 1)];
    case 'Home': return [i, 0];
    case 'End': return [i, cols - 1];
    default: return null;
  }
}
