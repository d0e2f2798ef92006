// tests/e2e/layout.test.mjs — the page shell: one page per chapter, each with a table of
// contents that lists every chapter of the registry in order and the current chapter's
// sections (following the reader), namespaced URL state that chapter pages do not overwrite,
// and the shared figure frame (export menu) and paste box on chapter 1's playground.
// Routing itself (old anchors, previous/next, the phone menu): routes.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkExports, noProblems, usePage } from './chapter-helpers.mjs';

const env = usePage();

test('every chapter page lists every chapter in the table of contents, and the current one\'s sections, which follow the reader', async () => {
  const { page, problems, close } = await env.open();
  try {
    const chapters = await page.$$eval('[data-testid="toc"] .toc-ch', (lis) => lis.map((li) => li.dataset.chapter));
    assert.ok(chapters.length >= 9, `at least chapters 1-9: ${chapters}`);
    assert.deepEqual(chapters.slice(0, 3), ['ch1', 'ch2', 'ch3']);
    for (const id of chapters) {
      await page.goto(`${env.server.url}#${id}`);
      await page.waitForFunction((id) => document.querySelector('article.chapter')?.id === id, id);
      assert.deepEqual(await page.$$eval('article.chapter', (as) => as.map((a) => a.id)), [id], 'one chapter per page');
      assert.deepEqual(await page.$$eval('[data-testid="toc"] .toc-ch', (lis) => lis.map((li) => li.dataset.chapter)), chapters);
      assert.equal(await page.getAttribute(`[data-testid="toc"] a[href="#${id}"]`, 'aria-current'), 'page');
      const listed = await page.$$eval('[data-testid="toc"] .toc-sections a', (as) => as.map((a) => a.getAttribute('href')));
      const sections = await page.$$eval(`#${id} > section`, (ss) => ss.map((s) => `#${s.id}`));
      assert.deepEqual(listed, sections, `TOC sections of ${id}`);
      const ids = await page.$$eval('[id]', (es) => es.map((e) => e.id));
      const dupes = [...new Set(ids.filter((x, i) => ids.indexOf(x) !== i))];
      assert.deepEqual(dupes, [], `ids are unique on the page of ${id}`);
    }

    await page.goto(`${env.server.url}#ch3`);
    await page.waitForFunction(() => document.querySelector('article.chapter')?.id === 'ch3');
    await page.evaluate(() => document.getElementById('c3-saturation').scrollIntoView({ block: 'start' }));
    await page.waitForFunction(() => document.querySelector('[data-testid="toc"] a[href="#c3-saturation"]')?.getAttribute('aria-current') === 'true');
    assert.equal(await page.locator('[data-testid="toc"] a[aria-current="true"]').count(), 1, 'one section is current');
    assert.equal(await page.locator('[data-testid="toc"] a[href="#worked"]').count(), 0, 'other chapters are listed by their titles only');
    noProblems(problems);
  } finally {
    await close();
  }
});

test('chapters keep their own URL keys: changing one chapter does not drop another chapter\'s state', async () => {
  const { page, problems, close } = await env.open('?score=additive&c2.alpha=0.5&c3.lk=8#ch2');
  try {
    await page.locator('[data-testid="figure-c2-grid"] [data-testid="c2-dh"]').fill('9');
    await page.waitForFunction(() => /c2\.dh=9/.test(location.search));
    // Another chapter's page, reached by its link: the query (every chapter's state) is kept.
    await page.click('[data-testid="chapter-prev"]');
    await page.waitForFunction(() => document.querySelector('article.chapter')?.id === 'ch1');
    assert.equal(await page.inputValue('[data-testid="score-select"]'), 'additive');
    await page.selectOption('[data-testid="score-select"]', 'cosine');
    await page.waitForFunction(() => /[?&]score=cosine/.test(location.search));
    const url = new URL(page.url());
    assert.equal(url.searchParams.get('c2.alpha'), '0.5');
    assert.equal(url.searchParams.get('c2.dh'), '9');
    assert.equal(url.searchParams.get('c3.lk'), '8');
    await page.click('[data-testid="lang-zh"]');
    await page.waitForFunction(() => /[?&]lang=zh/.test(location.search));
    const zh = new URL(page.url());
    assert.equal(zh.searchParams.get('score'), 'cosine');
    assert.equal(zh.searchParams.get('c2.dh'), '9');
    noProblems(problems);
  } finally {
    await close();
  }
});

test('figure 1.1 exports PNG, SVG, CSV, JSON and accepts pasted Q, K, V', async () => {
  const { page, problems, close } = await env.open();
  try {
    const files = await checkExports(page, 'figure-1');
    const csv = files.csv.bytes.toString('utf8');
    assert.match(csv, /^matrix,row,col,value\r\n/);
    assert.match(csv, /\r\nweights,1,1,0\.506/);
    const fig = page.locator('[data-testid="figure-1"]');
    // Escape closes the export menu and returns focus to its button.
    await fig.locator('[data-testid="export"]').click();
    assert.equal(await fig.locator('[data-testid="export-png"]').isVisible(), true);
    await page.keyboard.press('Escape');
    assert.equal(await fig.locator('[data-testid="export-png"]').isVisible(), false);
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'export');

    await fig.locator('[data-testid="fig1-paste"] > summary').click();
    await fig.locator('[data-testid="fig1-paste-text"]').fill('1 0\n0 1\n\n1 1\n0 1\n2 2');
    await fig.locator('[data-testid="fig1-paste-apply"]').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="heatmap-weights"] g.cell').length === 6);
    assert.equal(await page.inputValue('[data-testid="size-lq"]'), '2');
    assert.equal(await page.inputValue('[data-testid="size-lk"]'), '3');
    assert.match(page.url(), /[?&]k=1,1;0,1;2,2(&|$)/, 'pasted K in the URL (L_k = 3 is the default, so not written)');
    noProblems(problems);
  } finally {
    await close();
  }
});
