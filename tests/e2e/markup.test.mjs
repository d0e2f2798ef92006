// tests/e2e/markup.test.mjs — no raw markup reaches the reader, in either language: no
// literal ** (bold around math once failed), no TeX notation such as L_q, e^H or 2^(-8h/H)
// in labels, legends, axis titles or tables (they are drawn with real subscripts and
// superscripts), heatmap labels are not scaled down, and figure captions start with a capital after "What to notice.".
// Scans the visible text of every chapter page, outside KaTeX, code and form fields.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { noProblems, usePage } from './chapter-helpers.mjs';

const env = usePage();
const RAW = /\*\*|(^|[^A-Za-z0-9])[A-Za-zα-ω]_(\{|[A-Za-z0-9ℓ])|(^|[^A-Za-z0-9])[A-Za-z0-9]\^[({A-Za-z0-9]|\\[a-z]+\{/;

async function rawText(page) {
  // Lazy figures draw when they come near the viewport: walk down the page first.
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  for (let y = 0; y < height; y += 700) await page.evaluate((y) => window.scrollTo(0, y), y);
  await page.waitForTimeout(300);
  return page.evaluate((src) => {
    const re = new RegExp(src);
    const hits = [];
    const walker = document.createTreeWalker(document.getElementById('main'), NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const p = n.parentElement;
      if (!p || p.closest('.katex, code, pre, textarea, script, style, [hidden], .tooltip')) continue;
      const t = n.textContent;
      if (re.test(t)) hits.push(`${p.tagName.toLowerCase()}: ${t.trim().slice(0, 80)}`);
    }
    return hits;
  }, RAW.source);
}

for (const lang of ['en', 'zh']) {
  test(`${lang}: no literal ** or TeX notation in the visible text of any chapter`, async () => {
    const query = lang === 'zh' ? '?lang=zh' : '';
    const { page, problems, close } = await env.open(query);
    try {
      const ids = await page.$$eval('[data-testid="toc"] .toc-ch', (lis) => lis.map((li) => li.dataset.chapter));
      assert.ok(ids.length >= 9, `chapters: ${ids}`);
      for (const id of ids) {
        await page.goto(`${env.server.url}${query}#${id}`);
        await page.waitForFunction((id) => document.querySelector('article.chapter')?.id === id, id);
        assert.deepEqual(await rawText(page), [], `raw markup on ${id}`);
        // Heatmaps draw their cells to fit, so their labels keep their size (no 5-7 px text).
        // A heatmap redraws from its ResizeObserver in the next frame after a layout change;
        // on a loaded machine that frame can come after the walk's 300 ms, so allow it 3 s.
        const smallLabels = () => page.$$eval('.heatmap-svg', (svgs) => svgs
          .map((s) => ({ id: s.closest('.heatmap').dataset.testid, k: s.getBoundingClientRect().width / Number(s.getAttribute('width')) }))
          .filter((x) => Number.isFinite(x.k) && x.k < 0.95)
          .map((x) => `${x.id}: labels at ${(12 * x.k).toFixed(1)} px`));
        let small = await smallLabels();
        for (let t = 0; small.length > 0 && t < 15; t++) {
          await page.waitForTimeout(200);
          small = await smallLabels();
        }
        assert.deepEqual(small, [], `small heatmap labels on ${id}`);
        const captions = await page.$$eval('figcaption', (fs) => fs.map((f) => f.querySelector('strong')?.nextSibling?.textContent?.trim() ?? ''));
        // English captions; Chinese has no capitals (and keeps “softmax” lowercase).
        if (lang === 'en') for (const c of captions) assert.doesNotMatch(c, /^[a-z]/, `caption starts with a capital: ${c.slice(0, 40)}`);
      }
      noProblems(problems);
    } finally {
      await close();
    }
  });
}
