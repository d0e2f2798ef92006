// tests/e2e/heatmap-large.test.mjs — heatmaps too large to print their numbers (chapter 8's
// 16 x 16 maps, chapter 9 past L = 8) draw their colours on one canvas under transparent cells
// (web/src/charts/heatmap-field.ts): each pixel is its cell's colour (brighter for a larger
// weight on viridis), masked cells leave it transparent under the hatch, every point of a cell
// (corners too) reaches that cell, a map that shrinks back to printed numbers hides the field,
// and an export carries the colours as an image. Chapter 9's printed maps (canvasNumbers) draw
// colours and numbers on a second canvas: each cell's colour sits under its own cell and is the
// colour of the same map drawn as vector cells, the gaps stay clear, no number is drawn twice,
// and the export has them as vector cells and text. Their tick labels are on a layer of their own
// drawn where the SVG ticks are, in printed and large maps, English and Chinese; maps scaled down
// to fit (390 px) show the SVG ticks.
// The canvas is redrawn at a new device pixel ratio that leaves the maps' width alone (a HiDPI
// monitor), the maps are drawn at their viewBox's width (no fractional scale of the bitmap), and
// printing (beforeprint, print media, a PDF) draws them as vector cells and text, then the canvas again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ARTIFACTS, exportFile, noProblems, usePage } from './chapter-helpers.mjs';

const env = usePage();

/** Per cell of a large map: its value, mask, canvas pixel and whether its corners hit it. */
function readMap(page, testid) {
  return page.evaluate((testid) => {
    const svg = document.querySelector(`[data-testid="${testid}"] .heatmap-svg`);
    const canvas = svg.querySelector('.heatmap-field canvas.pixels');
    const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    const out = [];
    for (const g of svg.querySelectorAll('g.cell')) {
      const i = Number(g.dataset.i), j = Number(g.dataset.j);
      const k = 4 * (i * canvas.width + j);
      const b = g.getBoundingClientRect();
      // Near each corner, and 0.3 px inside the right and bottom edges (an unpainted stroke
      // under the pointer reached the next cell there: review).
      const corners = [[0.06, 0.06], [0.94, 0.06], [0.06, 0.94], [0.94, 0.94]]
        .map(([fx, fy]) => [b.left + fx * b.width, b.top + fy * b.height])
        .concat([[b.right - 0.3, b.top + b.height / 2], [b.left + b.width / 2, b.bottom - 0.3], [b.right - 0.3, b.bottom - 0.3]])
        .every(([x, y]) => document.elementFromPoint(x, y)?.closest('g.cell') === g);
      out.push({ i, j, value: Number(g.dataset.value), masked: g.dataset.masked === 'true', rgba: [...px.slice(k, k + 4)], corners });
    }
    return { large: svg.classList.contains('large'), w: canvas.width, h: canvas.height, cells: out };
  }, testid);
}

const luminance = ([r, g, b]) => 0.2126 * r + 0.7152 * g + 0.0722 * b;

test('large heatmaps: one canvas pixel per cell in value order, transparent under masked cells, whole cells under the pointer, exported as an image', async () => {
  const { page, problems, close } = await env.open('?c8.pattern=window#ch8');
  try {
    const fig = page.locator('[data-testid="figure-c8-sparse"]');
    await fig.scrollIntoViewIfNeeded();
    await page.waitForSelector('[data-testid="c8-sparse"] .heatmap-svg.large g.cell[data-masked="true"]');
    const map = await readMap(page, 'c8-sparse');
    assert.equal(map.large, true);
    assert.deepEqual([map.w, map.h], [16, 16]);
    assert.equal(map.cells.length, 256);
    const masked = map.cells.filter((c) => c.masked);
    const kept = map.cells.filter((c) => !c.masked);
    assert.ok(masked.length > 0 && kept.length > 0);
    assert.deepEqual(masked.filter((c) => c.rgba[3] !== 0), [], 'no colour under a masked cell');
    assert.deepEqual(kept.filter((c) => c.rgba[3] !== 255), [], 'every kept cell is painted');
    // Viridis grows brighter with the weight: no pair of kept cells in the wrong order (beyond
    // one colour step of the ten-stop ramp's interpolation).
    const sorted = kept.toSorted((a, b) => a.value - b.value);
    for (let k = 1; k < sorted.length; k++)
      assert.ok(luminance(sorted[k].rgba) >= luminance(sorted[k - 1].rgba) - 1,
        `cell (${sorted[k].i},${sorted[k].j}) = ${sorted[k].value} is darker than (${sorted[k - 1].i},${sorted[k - 1].j}) = ${sorted[k - 1].value}`);
    assert.ok(luminance(sorted.at(-1).rgba) > luminance(sorted[0].rgba) + 20, 'the colours spread with the values');
    assert.deepEqual(map.cells.filter((c) => !c.corners).map((c) => `${c.i},${c.j}`), [], 'every corner of a cell reaches that cell');
    // The export draws the canvas as an image (no foreignObject, which other viewers drop).
    const svg = (await exportFile(page, 'figure-c8-sparse', 'svg')).bytes.toString('utf8');
    assert.match(svg, /<image[^>]+href="data:image\/png;base64,/);
    assert.doesNotMatch(svg, /foreignObject|<canvas/);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('a map that grows past 8 columns switches to the canvas and back, with no stale field', async () => {
  const { page, problems, close } = await env.open('#ch9');
  try {
    const fig = page.locator('[data-testid="figure-c9-heads"]');
    await fig.scrollIntoViewIfNeeded();
    const slider = fig.locator('[data-testid="c9-l"]');
    const state = () => page.$eval('[data-testid="figure-c9-heads"] .heatmap-svg', (svg) => ({
      large: svg.classList.contains('large'),
      field: svg.querySelector('.heatmap-field')?.getAttribute('display') ?? 'absent',
      printed: svg.querySelector('.heatmap-field')?.classList.contains('printed') ?? false,
      // Printed numbers and colours on the canvas (its bitmap holds ink).
      ink: (() => {
        const c = svg.querySelector('.heatmap-field canvas.print');
        if (!c || !c.width) return 0;
        const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let k = 3; k < px.length; k += 4) n += px[k] > 0 ? 1 : 0;
        return n;
      })(),
      cols: Number(svg.dataset.cols),
    }));
    await page.waitForFunction(() => document.querySelector('[data-testid="figure-c9-heads"] .heatmap-svg g.cell'));
    for (const [L, large] of [[12, true], [8, false], [9, true], [8, false]]) {
      await slider.fill(String(L));
      await page.waitForFunction((L) => Number(document.querySelector('[data-testid="figure-c9-heads"] .heatmap-svg')?.dataset.cols) === L, L);
      const s = await state();
      assert.equal(s.large, large, `L = ${L}`);
      assert.equal(s.field, 'inline', `L = ${L}: the field is shown`);
      // Printed again: the canvas of numbers, not the stale one-pixel-per-cell colours.
      assert.equal(s.printed, !large, `L = ${L}: ${large ? 'one pixel per cell' : 'the printed canvas'}`);
      if (!large) assert.ok(s.ink > 0, `L = ${L}: colours and numbers are printed on the canvas again`);
    }
    noProblems(problems);
  } finally {
    await close();
  }
});

test('printed maps on a canvas (chapter 9): each colour under its own cell, clear gaps, the vector drawing\'s colours, numbers in the export', async () => {
  const { page, problems, close } = await env.open('?c9.heads=3&c9.L=6#ch9');
  try {
    const fig = page.locator('[data-testid="figure-c9-heads"]');
    await fig.scrollIntoViewIfNeeded();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="c9-entropy"] g.cell').length === 18);
    const ids = ['c9-entropy', 'c9-weights'];
    // The same maps drawn as vector cells (as for print and export): each cell's fill and number.
    await page.evaluate(() => window.dispatchEvent(new Event('beforeprint')));
    const vector = await page.evaluate((ids) => ids.map((testid) => [...document.querySelectorAll(`[data-testid="${testid}"] g.cell`)]
      .map((g) => ({ fill: g.querySelector('rect').getAttribute('fill'), text: g.querySelector('text').textContent }))), ids);
    await page.evaluate(() => window.dispatchEvent(new Event('afterprint')));
    await page.waitForFunction(() => document.querySelector('[data-testid="c9-weights"] .heatmap-svg').classList.contains('canvas-numbers'));
    for (const [m, testid] of ids.entries()) {
      const r = await page.evaluate(({ testid, want }) => {
        const svg = document.querySelector(`[data-testid="${testid}"] .heatmap-svg`);
        const holder = svg.querySelector('.heatmap-field');
        const canvas = holder.querySelector('canvas.print');
        const scale = canvas.width / parseFloat(canvas.style.width);
        const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        const at = (x, y) => { const k = 4 * (Math.floor(y * scale) * canvas.width + Math.floor(x * scale)); return [...px.slice(k, k + 4)]; };
        // Cells sit in grid units in one group scaled by the cell size; the canvas draws each
        // cell 1 px in from its square, cell - 2 px wide, from the holder's corner.
        const cell = Number(svg.querySelector('g.cells').getAttribute('transform').match(/scale\(([\d.]+)\)/)[1]);
        const side = cell - 2;
        const bad = [];
        const cells = [...svg.querySelectorAll('g.cell')];
        cells.forEach((g, k) => {
          const [i, j] = [Number(g.dataset.i), Number(g.dataset.j)];
          const [tx, ty] = [j * cell + 1, i * cell + 1];
          // Inside the cell (top middle, clear of its number) and in the gap left of it.
          const inside = at(tx + side / 2, ty + 3);
          const gap = at(tx - 0.5, ty + side / 2);
          const rgb = want[k].fill.match(/\d+/g).map(Number);
          if (inside[3] !== 255 || inside.slice(0, 3).some((v, c) => Math.abs(v - rgb[c]) > 2)) bad.push(`(${i},${j}) inside ${inside} want ${rgb}`);
          if (gap[3] > 64) bad.push(`(${i},${j}) gap ${gap}`);
        });
        const shownTexts = cells.filter((g) => g.querySelector('text').textContent && getComputedStyle(g.querySelector('text')).display !== 'none').length;
        return { bad, shownTexts, cells: cells.length, printed: holder.classList.contains('printed') };
      }, { testid, want: vector[m] });
      assert.equal(r.printed, true, `${testid}: printed on the canvas`);
      assert.equal(r.cells, vector[m].length, `${testid}: as many cells as the vector drawing`);
      assert.deepEqual(r.bad, [], `${testid}: the vector drawing's colours under their cells`);
      assert.equal(r.shownTexts, 0, `${testid}: no number drawn twice (SVG and canvas)`);
    }
    // The export has vector cells with their numbers, not the canvas; the page is back on it.
    const svg = (await exportFile(page, 'figure-c9-heads', 'svg')).bytes.toString('utf8');
    assert.doesNotMatch(svg, /foreignObject|<canvas|<image/);
    const printed = vector[1].map((c) => c.text);
    assert.ok(printed.length === 36 && printed.every((n) => /^\d\.\d\d$/.test(n)), `numbers of the vector drawing: ${printed.join(' ')}`);
    for (const n of printed) assert.match(svg, new RegExp(`>${n.replace('.', '\\.')}</text>`));
    assert.doesNotMatch(svg, /<text[^>]*display="none"[^>]*>0\.\d\d</, 'no number hidden in the export');
    await page.waitForFunction(() => document.querySelector('[data-testid="c9-weights"] .heatmap-svg').classList.contains('canvas-numbers'));
    noProblems(problems);
  } finally {
    await close();
  }
});

/** Chapter 9's canvas maps: bitmap scale, drawn size against the viewBox, and what is shown. */
function canvasMaps(page) {
  return page.evaluate(() => ['c9-entropy', 'c9-maxweight', 'c9-support', 'c9-weights'].map((testid) => {
    const svg = document.querySelector(`[data-testid="${testid}"] .heatmap-svg`);
    const holder = svg.querySelector('.heatmap-field');
    const canvas = holder?.querySelector('canvas.print');
    const cells = [...svg.querySelectorAll('g.cell')].filter((g) => g.dataset.masked !== 'true');
    const texts = cells.map((g) => g.querySelector('text')).filter((t) => t.textContent);
    return {
      testid,
      dpr: window.devicePixelRatio,
      scale: canvas ? canvas.width / parseFloat(canvas.style.width) : 0,
      // Drawn width less the viewBox's (0: the bitmap is not scaled off its device pixels).
      drawn: svg.getBoundingClientRect().width - svg.viewBox.baseVal.width,
      width: svg.getBoundingClientRect().width,
      canvasShown: svg.classList.contains('canvas-numbers') && holder?.getAttribute('display') === 'inline' && getComputedStyle(canvas).display !== 'none',
      shownTexts: texts.filter((t) => getComputedStyle(t).display !== 'none' && t.getAttribute('fill') && t.getAttribute('fill') !== 'currentColor').length,
      filledRects: cells.filter((g) => !/^(transparent|none|url)/.test(g.querySelector('rect').getAttribute('fill'))).length,
      texts: texts.length,
      cells: cells.length,
    };
  }));
}

test('canvas maps redraw at a new device pixel ratio that leaves their width alone, drawn 1:1 at 1440 px', async () => {
  const { page, problems, close } = await env.open('#ch9', { viewport: { width: 1440, height: 900 } });
  try {
    await page.locator('[data-testid="figure-c9-heads"]').scrollIntoViewIfNeeded();
    await page.waitForFunction(() => document.querySelector('[data-testid="c9-weights"] .heatmap-field canvas.print'));
    const before = await canvasMaps(page);
    for (const m of before) {
      assert.equal(m.dpr, 1);
      assert.equal(m.scale, 1, `${m.testid}: a 1x bitmap at DPR 1`);
      assert.ok(Math.abs(m.drawn) < 0.01, `${m.testid}: drawn ${m.drawn} px off its viewBox width`);
    }
    // A device pixel ratio of 2 (a HiDPI monitor). Headless Chromium fires no event for an
    // override that changes the ratio alone (a real monitor or zoom fires the resolution media
    // query), so the viewport also grows by 1 px: the maps keep their width (asserted below),
    // so it is not the heatmap's resize observer (2 px threshold) that redraws them.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Emulation.setDeviceMetricsOverride', { width: 1441, height: 900, deviceScaleFactor: 2, mobile: false });
    await page.waitForFunction(() => window.devicePixelRatio === 2);
    await page.waitForFunction(() => [...document.querySelectorAll('.heatmap-svg.canvas-numbers canvas.print')]
      .every((c) => c.width === 2 * parseFloat(c.style.width)), null, { timeout: 5000 });
    const after = await canvasMaps(page);
    for (const m of after) {
      assert.equal(m.scale, 2, `${m.testid}: a 2x bitmap at DPR 2`);
      assert.ok(m.canvasShown, `${m.testid}: still on the canvas`);
      assert.ok(Math.abs(m.drawn) < 0.01, `${m.testid}: drawn ${m.drawn} px off its viewBox width`);
    }
    assert.deepEqual(after.map((m) => m.width), before.map((m) => m.width), 'the maps keep their width');
    // A screenshot at the emulated ratio (page.screenshot would reset it), for a look at the numbers.
    const box = await page.$eval('[data-testid="c9-weights"] .heatmap-svg', (svg) => {
      svg.scrollIntoView({ block: 'center' });
      const r = svg.getBoundingClientRect();
      return { x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height }; // page coordinates
    });
    const shot = await cdp.send('Page.captureScreenshot', { format: 'png', clip: { ...box, scale: 1 } });
    await writeFile(join(ARTIFACTS, 'c9-weights-dpr2.png'), Buffer.from(shot.data, 'base64'));
    noProblems(problems);
  } finally {
    await close();
  }
});

test('canvas maps print as vector cells and text (beforeprint, print media, PDF) and go back to the canvas after', async () => {
  const { page, problems, close } = await env.open('?c9.heads=3&c9.L=6#ch9');
  try {
    await page.locator('[data-testid="figure-c9-heads"]').scrollIntoViewIfNeeded();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="c9-entropy"] g.cell').length === 18);
    const onCanvas = async (what) => {
      for (const m of await canvasMaps(page)) {
        assert.ok(m.canvasShown, `${what}: ${m.testid} on the canvas`);
        assert.equal(m.shownTexts, 0, `${what}: ${m.testid} draws no SVG number`);
        assert.equal(m.filledRects, 0, `${what}: ${m.testid} draws no SVG fill`);
      }
    };
    const asVector = async (what) => {
      for (const m of await canvasMaps(page)) {
        assert.ok(!m.canvasShown, `${what}: ${m.testid} hides its canvas`);
        assert.ok(m.texts > 0, `${what}: ${m.testid} prints numbers`);
        assert.equal(m.shownTexts, m.texts, `${what}: ${m.testid} shows every number as SVG text`);
        assert.equal(m.filledRects, m.cells, `${what}: ${m.testid} fills every cell`);
      }
    };
    await onCanvas('screen');
    await page.evaluate(() => window.dispatchEvent(new Event('beforeprint')));
    await asVector('beforeprint');
    await page.evaluate(() => window.dispatchEvent(new Event('afterprint')));
    await onCanvas('afterprint');
    // Print media without the events (a print preview that only changes the media).
    await page.emulateMedia({ media: 'print' });
    await page.waitForFunction(() => !document.querySelector('[data-testid="c9-weights"] .heatmap-svg').classList.contains('canvas-numbers'));
    await asVector('print media');
    await page.emulateMedia({ media: 'screen' });
    await page.waitForFunction(() => document.querySelector('[data-testid="c9-weights"] .heatmap-svg').classList.contains('canvas-numbers'));
    await onCanvas('screen again');
    // Save as PDF (it fires beforeprint / afterprint): no bitmap of numbers in the file.
    const pdf = (await page.pdf()).toString('latin1');
    assert.equal(pdf.match(/\/Subtype\s*\/Image/g)?.length ?? 0, 0, 'the PDF embeds no image');
    await onCanvas('after the PDF');
    noProblems(problems);
  } finally {
    await close();
  }
});

test('canvas maps: tick labels on their own layer where the SVG ticks are drawn in print, in both languages; SVG ticks while scaled down', async () => {
  for (const [width, L, lang] of [[1440, 6, 'en'], [1440, 12, 'zh'], [1440, 6, 'zh'], [700, 9, 'en'], [390, 6, 'zh'], [390, 16, 'en']]) {
    const { page, problems, close } = await env.open(`?lang=${lang}&c9.heads=3&c9.L=${L}#ch9`, { viewport: { width, height: 900 } });
    try {
      await page.locator('[data-testid="figure-c9-heads"]').scrollIntoViewIfNeeded();
      await page.waitForFunction((L) => document.querySelectorAll('[data-testid="c9-weights"] g.cell').length === L * L, L);
      // Each shown label's box: label, centre x, top, bottom (page px); which source shows it.
      const read = () => page.evaluate(() => ['c9-entropy', 'c9-weights'].map((id) => {
        const root = document.querySelector(`[data-testid="${id}"]`);
        const svg = root.querySelector('.heatmap-svg');
        const box = (t) => { const r = t.getBoundingClientRect(); return [t.textContent, Math.round((r.x + r.width / 2) * 100) / 100, Math.round(r.y * 100) / 100, Math.round(r.bottom * 100) / 100]; };
        const shown = (t) => t.checkVisibility();
        return {
          scaled: svg.getBoundingClientRect().width < svg.viewBox.baseVal.width - 0.5,
          own: [...svg.querySelectorAll('.axes .tick')].filter(shown).map(box),
          layer: [...root.querySelectorAll('.heatmap-ticks .tick')].filter(shown).map(box),
        };
      }));
      const screen = await read();
      await page.evaluate(() => window.dispatchEvent(new Event('beforeprint')));
      const print = await read();
      await page.evaluate(() => window.dispatchEvent(new Event('afterprint')));
      const back = await read();
      for (const [m, id] of ['c9-entropy', 'c9-weights'].entries()) {
        const what = `${id} at ${width} px, L = ${L}, ${lang}`;
        const n = id === 'c9-weights' ? 2 * L : L + 3;
        const s = screen[m];
        assert.equal(s.layer.length, s.scaled ? 0 : n, `${what}: ${s.scaled ? 'no label on the layer (scaled down)' : 'one label per row and column on the layer'}`);
        assert.equal(s.own.length, s.scaled ? n : 0, `${what}: ${s.scaled ? 'the SVG ticks' : 'no SVG tick'} on screen`);
        assert.equal(print[m].layer.length, 0, `${what}: no layer label in print`);
        assert.equal(print[m].own.length, n, `${what}: SVG labels in print`);
        const shownNow = s.scaled ? s.own : s.layer;
        const off = shownNow.filter((t, k) => t[0] !== print[m].own[k][0] || t.slice(1).some((v, c) => Math.abs(v - print[m].own[k][c + 1]) > 0.1));
        assert.deepEqual(off, [], `${what}: labels where print's SVG labels are`);
        assert.deepEqual(back[m], s, `${what}: the same after print`);
      }
      noProblems(problems);
    } finally {
      await close();
    }
  }
});
