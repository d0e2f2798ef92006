/**
 * Printed numbers of canvas heatmaps (heatmap-field.ts drawPrinted) drawn from a cache of their
 * bitmaps: each (text, ink, font, scale, sub-pixel offset) is rendered once with fillText on a
 * detached canvas, kept in an ImageBitmap, and copied with drawImage. fillText on the page's
 * canvas made the browser resolve that canvas's style while the document was dirty (a forced
 * style recalc per map and input) and drew ~160 texts per input (native/bench/NOTES.md,
 * "Sliders, ninth pass"). A text is rendered at the same device-pixel fraction as it would be
 * on the page's canvas, so the copy has its pixels. The texts a draw lacks are rendered
 * together into one bitmap; not one atlas canvas: a drawImage from a canvas copies the whole
 * source canvas each time (~0.3 ms for 1024 x 1024 px).
 */

/** Transparent margin around a text's ink box, in device pixels (antialiasing). */
const PAD = 2;
/** Texts kept at most; past this the cache is emptied (a long session of many values). */
const MAX = 4000;

interface Glyph {
  bitmap: ImageBitmap;
  /** The text's box in the bitmap, and its anchor (text-align center, alphabetic baseline) in the box, in device px. */
  sx: number;
  w: number;
  h: number;
  ax: number;
  ay: number;
}

type Ctx = OffscreenCanvasRenderingContext2D;
/** `draw` is resized for each batch of new texts; `measure` keeps its size and its font. */
let tools: { canvas: OffscreenCanvas; draw: Ctx; measure: Ctx; font: string } | null | undefined;
/** Per font and scale (`css scale`), the texts rendered in it. */
const fonts = new Map<string, Map<string, Glyph>>();
let count = 0;
const bitmaps = new Set<ImageBitmap>();

function clear(): void {
  for (const b of bitmaps) b.close();
  bitmaps.clear();
  fonts.clear();
  count = 0;
}

function open(): typeof tools {
  if (tools !== undefined) return tools;
  const ok = typeof OffscreenCanvas === 'function' && typeof OffscreenCanvas.prototype.transferToImageBitmap === 'function';
  const canvas = ok ? new OffscreenCanvas(1, 1) : null;
  const draw = canvas?.getContext('2d') ?? null;
  const measure = ok ? new OffscreenCanvas(1, 1).getContext('2d') : null;
  tools = canvas && draw && measure ? { canvas, draw, measure, font: '' } : null;
  // A font that arrives later would draw other glyphs than those cached.
  if (tools) document.fonts?.addEventListener?.('loadingdone', clear);
  return tools;
}

/** A text's key within its font's table: ink, sub-pixel offset, text. */
const keyOf = (t: GlyphText, fx: number, fy: number) => `${t.ink} ${fx} ${fy} ${t.text}`;

/** Renders the missing texts side by side into one new bitmap and caches each. */
function render(tl: NonNullable<typeof tools>, glyphs: Map<string, Glyph>, missing: Map<string, [GlyphText, number, number]>, css: string, scale: number): void {
  count += missing.size;
  if (tl.font !== css) {
    tl.measure.font = tl.font = css;
    tl.measure.textAlign = 'center';
  }
  const boxes: [string, GlyphText, number, number, Omit<Glyph, 'bitmap'>][] = [];
  let x = 0;
  let height = 1;
  for (const [key, [t, fx, fy]] of missing) {
    const m = tl.measure.measureText(t.text);
    const ax = Math.ceil(m.actualBoundingBoxLeft * scale) + PAD;
    const ay = Math.ceil(m.actualBoundingBoxAscent * scale) + PAD;
    const w = ax + Math.ceil(m.actualBoundingBoxRight * scale) + PAD + 1;
    const h = ay + Math.ceil(m.actualBoundingBoxDescent * scale) + PAD + 1;
    boxes.push([key, t, fx, fy, { sx: x, w, h, ax, ay }]);
    x += w;
    height = Math.max(height, h);
  }
  const { canvas, draw } = tl;
  canvas.width = Math.max(1, x); // a new size clears the bitmap and the context's state
  canvas.height = height;
  draw.setTransform(scale, 0, 0, scale, 0, 0);
  draw.font = css;
  draw.textAlign = 'center';
  draw.textBaseline = 'alphabetic';
  draw.direction = 'ltr';
  for (const [, t, fx, fy, b] of boxes) {
    draw.fillStyle = t.ink;
    // The anchor at the same fraction of a device pixel as on the page's canvas.
    draw.fillText(t.text, (b.sx + b.ax + fx) / scale, (b.ay + fy) / scale);
  }
  const bitmap = canvas.transferToImageBitmap();
  bitmaps.add(bitmap);
  for (const [key, , , , b] of boxes) glyphs.set(key, { bitmap, ...b });
}

/** One text to draw: its anchor (text-align center, alphabetic baseline) in CSS px. */
export interface GlyphText {
  text: string;
  ink: string;
  x: number;
  y: number;
}

/**
 * Draws `texts` on `ctx` (a canvas whose transform is `scale` device pixels per CSS px, left
 * so), in `css` font, as fillText with textAlign center would; returns false, having drawn
 * nothing, when the cache cannot (no OffscreenCanvas), leaving the caller to draw them.
 */
export function drawTexts(ctx: CanvasRenderingContext2D, texts: readonly GlyphText[], css: string, scale: number): boolean {
  const tl = open();
  if (!tl) return false;
  if (count > MAX) clear();
  const font = `${css} ${scale}`;
  let glyphs = fonts.get(font);
  if (!glyphs) fonts.set(font, (glyphs = new Map()));
  const at: [string, number, number][] = [];
  let missing: Map<string, [GlyphText, number, number]> | null = null;
  for (const t of texts) {
    const dx = t.x * scale;
    const dy = t.y * scale;
    const ix = Math.floor(dx);
    const iy = Math.floor(dy);
    const key = keyOf(t, dx - ix, dy - iy);
    if (!glyphs.has(key)) (missing ??= new Map()).set(key, [t, dx - ix, dy - iy]);
    at.push([key, ix, iy]);
  }
  if (missing) render(tl, glyphs, missing, css, scale);
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  for (const [key, ix, iy] of at) {
    const g = glyphs.get(key)!;  // rendered above if it was missing
    ctx.drawImage(g.bitmap, g.sx, 0, g.w, g.h, ix - g.ax, iy - g.ay, g.w, g.h);
  }
  ctx.setTransform(scale, 0, 0, scale, 0, 0);
  return true;
}
