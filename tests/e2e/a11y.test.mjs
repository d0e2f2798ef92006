// tests/e2e/a11y.test.mjs — axe-core (the accessibility engine, run inside the page) reports
// no violation on any chapter page of the tutorial, in English and Chinese, light and dark,
// at desktop width and (with the contents menu open) at 390 px, once every lazily drawn
// figure is on the page: names of form controls, names that match visible text,
// text contrast of at least 4.5:1 (heatmap numbers included), ARIA use, landmarks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PHONE, axeViolations, noProblems, usePage } from './chapter-helpers.mjs';

const env = usePage();

/** Heatmap cells whose printed number has less than 4.5:1 contrast with the cell's fill. */
async function heatmapContrast(page) {
  return page.$$eval('.heatmap g.cell', (cells) => {
    const rgb = (c) => (c.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number);
    // '#000' or '#ffffff' to [r, g, b].
    const hexRgb = (c) => (c.length === 4 ? [...c.slice(1)].map((d) => d + d) : c.slice(1).match(/../g)).map((h) => parseInt(h, 16));
    const lum = ([r, g, b]) => {
      const f = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const out = [];
    for (const g of cells) {
      const text = g.querySelector('text');
      const rect = g.querySelector('rect');
      if (!text?.textContent || !rect) continue;
      // A map that prints on a canvas (chapter 9) names the fill and ink it paints there
      // (tests/e2e/heatmap-large.test.mjs checks the canvas against data-fill).
      const fill = g.dataset.fill ?? getComputedStyle(rect).fill;
      if (!fill.startsWith('rgb')) continue; // hatched (masked) cells: a pattern, no number
      const a = lum(rgb(fill));
      const b = lum(g.dataset.ink ? hexRgb(g.dataset.ink) : rgb(getComputedStyle(text).fill));
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      if (ratio < 4.5) out.push(`${g.closest('.heatmap').dataset.testid} (${g.dataset.i},${g.dataset.j}) "${text.textContent}": ${ratio.toFixed(2)}:1 on ${fill}`);
    }
    return out;
  });
}

const chapterIds = (page) => page.$$eval('[data-testid="toc"] .toc-ch', (lis) => lis.map((li) => li.dataset.chapter));

/** Opens each chapter's page in turn (same document, as a reader following links) and runs `check` on it. */
async function eachChapter(page, query, check) {
  const ids = await chapterIds(page);
  assert.ok(ids.length >= 9, `chapters: ${ids}`);
  for (const id of ids) {
    await page.goto(`${env.server.url}${query}#${id}`);
    await page.waitForFunction((id) => document.querySelector('article.chapter')?.id === id, id);
    await check(id);
  }
}

for (const [lang, scheme] of [['en', 'light'], ['zh', 'dark'], ['en', 'dark'], ['zh', 'light']]) {
  test(`axe-core: no violations on any chapter page (${lang}, ${scheme})`, async () => {
    const query = lang === 'zh' ? '?lang=zh' : '';
    const { page, problems, close } = await env.open(query, { colorScheme: scheme });
    try {
      const found = [];
      await eachChapter(page, query, async (id) => {
        found.push(...(await axeViolations(page)).map((v) => `${id}: ${v}`));
        // axe does not measure text drawn in SVG: check every heatmap number against its cell.
        found.push(...(await heatmapContrast(page)).map((v) => `${id}: heatmap number below 4.5:1: ${v}`));
      });
      assert.deepEqual(found, [], `${found.length} violations:\n${found.slice(0, 40).join('\n')}`);
      noProblems(problems);
    } finally {
      await close();
    }
  });
}

for (const [lang, scheme] of [['en', 'light'], ['zh', 'dark'], ['en', 'dark'], ['zh', 'light']]) {
  test(`axe-core: no violations on any chapter page at 390 px (formulas and tables that scroll sideways), and with the contents menu open (${lang}, ${scheme})`, async () => {
    const query = lang === 'zh' ? '?lang=zh' : '';
    const { page, problems, close } = await env.open(query, { viewport: PHONE, colorScheme: scheme });
    try {
      const found = [];
      await eachChapter(page, query, async (id) => {
        found.push(...(await axeViolations(page)).map((v) => `${id}: ${v}`));
      });
      // The button must be on screen; the click itself skips Playwright's wait for two equal
      // animation frames ("stable"): after eleven axe runs on a loaded 2-core CI machine that
      // wait once ran out (30 s) with the button in place and nothing else failing.
      assert.equal(await page.isVisible('[data-testid="toc-toggle"]'), true, 'the contents button is visible');
      await page.click('[data-testid="toc-toggle"]', { force: true });
      await page.waitForSelector('[data-testid="toc"]', { state: 'visible', timeout: 10_000 });
      assert.equal(await page.getAttribute('[data-testid="toc-toggle"]', 'aria-expanded'), 'true');
      found.push(...(await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations
        .flatMap((v) => v.nodes.map((n) => `menu open: ${v.id}: ${n.target.join(' ')}`)))));
      assert.deepEqual(found, [], `${found.length} violations:\n${found.slice(0, 40).join('\n')}`);
      noProblems(problems);
    } finally {
      await close();
    }
  });
}
