/**
 * Export of figures: the charts as one standalone SVG (computed styles inlined, so it looks
 * the same outside the page) or PNG (the SVG drawn on a canvas at 2x), and the data as CSV
 * (RFC 4180) or JSON. Downloads go through an <a download> with a blob URL.
 * Any chart that can hand over its <svg> elements (`parts()`) can be exported.
 */
import type { RowMajor } from '../model/matrix';

/** One chart in an export: its SVG elements stacked top to bottom, under an optional title. */
export interface SvgSource {
  title?: string;
  parts: SVGSVGElement[];
}

/** Something that draws into SVG elements (Heatmap, LineChart, BarChart). */
export interface HasParts {
  parts(): SVGSVGElement[];
}

/** Tabular data of a figure: CSV writes it as is; JSON wraps it (or `json` when given). */
export interface FigureData {
  columns: string[];
  rows: (string | number | boolean | null)[][];
  /** Richer JSON (e.g. the inputs and the state); default { columns, rows }. */
  json?: unknown;
}

const SVG_NS = 'http://www.w3.org/2000/svg';
const STYLE_PROPS = [
  'fill', 'fill-opacity', 'stroke', 'stroke-width', 'stroke-dasharray', 'stroke-opacity', 'stroke-linecap',
  'stroke-linejoin', 'opacity', 'font-family', 'font-size', 'font-weight', 'font-style', 'font-variant-numeric',
  'text-anchor', 'dominant-baseline', 'visibility', 'display',
] as const;

/** Its size; a heatmap whose <svg> is larger than the map (heatmap-box.ts) names the map's in data-width / data-height. */
function sizeOf(svg: SVGSVGElement): { w: number; h: number } {
  const vb = svg.viewBox?.baseVal;
  const w = Number(svg.dataset.width) || Number(svg.getAttribute('width')) || vb?.width || svg.getBoundingClientRect().width;
  const h = Number(svg.dataset.height) || Number(svg.getAttribute('height')) || vb?.height || svg.getBoundingClientRect().height;
  return { w: Math.ceil(w), h: Math.ceil(h) };
}

/** A deep copy of `svg` with every element's computed presentation inlined as attributes. */
function inlined(svg: SVGSVGElement): SVGSVGElement {
  const copy = svg.cloneNode(true) as SVGSVGElement;
  // Only the map's own area (a steady heatmap's <svg> may be larger: heatmap-box.ts).
  if (svg.dataset.width && svg.dataset.height) copy.setAttribute('viewBox', `0 0 ${svg.dataset.width} ${svg.dataset.height}`);
  const src = [svg, ...svg.querySelectorAll('*')];
  const dst = [copy, ...copy.querySelectorAll('*')];
  src.forEach((el, k) => {
    const out = dst[k] as SVGElement;
    const cs = getComputedStyle(el);
    for (const p of STYLE_PROPS) {
      const v = cs.getPropertyValue(p);
      if (v && !(p === 'display' && v !== 'none')) out.setAttribute(p, v);
    }
    out.removeAttribute('class');
    out.removeAttribute('tabindex');
    out.removeAttribute('style');
  });
  // A map whose numbers are drawn on a canvas (heatmap.ts, canvasNumbers) is drawn as vector
  // cells and text by its parts() before it gets here.
  // A canvas (a large heatmap's colours, heatmap-field.ts) is copied blank and would not be
  // drawn outside the page: its pixels become an <image> in the holder's place.
  const canvases = svg.querySelectorAll('canvas');
  copy.querySelectorAll('canvas').forEach((c, k) => {
    const holder = c.closest('foreignObject');
    if (!holder) return;
    // A map drawn small now, or one whose cells were just made vector again (above).
    if (holder.getAttribute('display') === 'none' || canvases[k]!.closest('foreignObject')?.classList.contains('printed')) return holder.remove();
    const img = document.createElementNS(SVG_NS, 'image');
    for (const a of ['x', 'y', 'width', 'height', 'display']) {
      const v = holder.getAttribute(a);
      if (v !== null) img.setAttribute(a, v);
    }
    img.setAttribute('preserveAspectRatio', 'none');
    img.setAttribute('style', 'image-rendering: pixelated');
    img.setAttribute('href', canvases[k]!.toDataURL('image/png'));
    holder.replaceWith(img);
  });
  return copy;
}

/**
 * One standalone SVG of several charts, laid out left to right and wrapped at `maxWidth`,
 * each with its title above and its parts stacked. Returns the markup and its size.
 */
export function composeSvg(sources: SvgSource[], opts: { title?: string; background?: string; maxWidth?: number } = {}): { svg: string; width: number; height: number } {
  const gap = 24;
  const pad = 16;
  const titleH = 22;
  const maxWidth = opts.maxWidth ?? 1200;
  const root = document.createElementNS(SVG_NS, 'svg');
  root.setAttribute('xmlns', SVG_NS);
  const host = document.documentElement;
  const cs = getComputedStyle(host);
  const bg = opts.background ?? (cs.getPropertyValue('--panel').trim() || '#ffffff');
  const fg = cs.color || '#111111';
  const font = cs.fontFamily;
  let x = pad;
  let y = pad;
  let rowH = 0;
  let width = 0;
  const placed: Element[] = [];
  if (opts.title) {
    placed.push(textEl(opts.title, pad, y + 15, fg, font, 15, 700));
    y += titleH + 8;
  }
  for (const s of sources) {
    const sizes = s.parts.map(sizeOf);
    const w = Math.max(0, ...sizes.map((z) => z.w));
    const h = sizes.reduce((a, z) => a + z.h, 0) + (s.title ? titleH : 0);
    if (x > pad && x + w > maxWidth) {
      x = pad;
      y += rowH + gap;
      rowH = 0;
    }
    const g = document.createElementNS(SVG_NS, 'g');
    g.setAttribute('transform', `translate(${x},${y})`);
    let yy = 0;
    if (s.title) {
      g.append(textEl(s.title, 0, 15, fg, font, 13, 600));
      yy += titleH;
    }
    s.parts.forEach((p, k) => {
      const c = inlined(p);
      c.setAttribute('x', '0');
      c.setAttribute('y', String(yy));
      c.setAttribute('width', String(sizes[k]!.w));
      c.setAttribute('height', String(sizes[k]!.h));
      c.setAttribute('overflow', 'visible');
      g.append(c);
      yy += sizes[k]!.h;
    });
    placed.push(g);
    x += w + gap;
    rowH = Math.max(rowH, h);
    width = Math.max(width, x - gap + pad);
  }
  const height = y + rowH + pad;
  root.setAttribute('width', String(width));
  root.setAttribute('height', String(height));
  root.setAttribute('viewBox', `0 0 ${width} ${height}`);
  root.setAttribute('font-family', font);
  root.setAttribute('color', fg);
  const back = document.createElementNS(SVG_NS, 'rect');
  back.setAttribute('width', '100%');
  back.setAttribute('height', '100%');
  back.setAttribute('fill', bg);
  root.append(back, ...placed);
  // Ids inside copies are unique already (each chart instance has its own prefix).
  return { svg: `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(root)}`, width, height };
}

function textEl(text: string, x: number, y: number, fill: string, font: string, size: number, weight: number): SVGTextElement {
  const t = document.createElementNS(SVG_NS, 'text');
  t.setAttribute('x', String(x));
  t.setAttribute('y', String(y));
  t.setAttribute('fill', fill);
  t.setAttribute('font-family', font);
  t.setAttribute('font-size', String(size));
  t.setAttribute('font-weight', String(weight));
  t.textContent = text;
  return t;
}

/** Rasterizes SVG markup to a PNG blob at `scale` times its size. */
export function svgToPng(svg: string, width: number, height: number, scale = 2): Promise<Blob> {
  return new Promise((resolve, reject) => {
    const url = URL.createObjectURL(new Blob([svg], { type: 'image/svg+xml;charset=utf-8' }));
    const img = new Image();
    img.onload = () => {
      try {
        const canvas = document.createElement('canvas');
        canvas.width = Math.ceil(width * scale);
        canvas.height = Math.ceil(height * scale);
        const g = canvas.getContext('2d');
        if (!g) throw new Error('no 2d canvas context');
        g.drawImage(img, 0, 0, canvas.width, canvas.height);
        canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('PNG encoding failed'))), 'image/png');
      } catch (e) {
        reject(e instanceof Error ? e : new Error(String(e)));
      } finally {
        URL.revokeObjectURL(url);
      }
    };
    img.onerror = () => {
      URL.revokeObjectURL(url);
      reject(new Error('the SVG could not be drawn'));
    };
    img.src = url;
  });
}

/** Starts a download of `blob` as `filename`. */
export function download(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function csvCell(v: string | number | boolean | null): string {
  if (v === null) return '';
  const s = typeof v === 'number' ? (Number.isFinite(v) ? String(v) : v > 0 ? 'Infinity' : v < 0 ? '-Infinity' : 'NaN') : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** CSV text (header line, CRLF line ends as RFC 4180 asks). */
export function toCsv(data: FigureData): string {
  return [data.columns, ...data.rows].map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n';
}

/** JSON text; non-finite numbers become the strings "Infinity", "-Infinity", "NaN". */
export function toJson(value: unknown): string {
  return JSON.stringify(
    value,
    (_k, v: unknown) => {
      if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
      if (ArrayBuffer.isView(v) && !(v instanceof DataView)) return Array.from(v as unknown as ArrayLike<number>);
      return v;
    },
    2,
  );
}

/**
 * Matrices as one tidy table: matrix, row, col, value (1-based indices), e.g.
 * matricesTable([['weights', r.weights], ['output', r.output]]).
 */
export function matricesTable(named: [string, RowMajor][], rowName = 'row', colName = 'col'): FigureData {
  const rows: FigureData['rows'] = [];
  const json: Record<string, number[][]> = {};
  for (const [name, m] of named) {
    json[name] = [];
    for (let i = 0; i < m.rows; i++) {
      const r: number[] = [];
      for (let j = 0; j < m.cols; j++) {
        const v = m.data[i * m.cols + j]!;
        rows.push([name, i + 1, j + 1, v]);
        r.push(v);
      }
      json[name]!.push(r);
    }
  }
  return { columns: ['matrix', rowName, colName, 'value'], rows, json };
}

/** Line/bar series as one tidy table: series, x, y. */
export function seriesTable(series: { id: string; points: { x: number | string; y: number }[] }[], xName = 'x', yName = 'y'): FigureData {
  const rows: FigureData['rows'] = [];
  for (const s of series) for (const p of s.points) rows.push([s.id, p.x, p.y]);
  return { columns: ['series', xName, yName], rows, json: Object.fromEntries(series.map((s) => [s.id, s.points])) };
}
