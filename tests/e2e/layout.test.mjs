// tests/e2e/layout.test.mjs — the multi-chapter page shell: every chapter of the registry in
// order, a table of contents that lists every chapter and its sections and follows the
// reader, namespaced URL state that chapters do not overwrite, and the shared figure frame
// (export menu) and paste box on chapter 1's playground.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkExports, noProblems, usePage } from './chapter-helpers.mjs';

const env = usePage();

test('the table of contents lists every chapter and its sections, and follows the reader', async () => {
  const { page, problems, close } = await env.open();
  try {
    const chapters = await page.$$eval('article.chapter', (as) => as.map((a) => a.id));
    assert.ok(chapters.length >= 3, `at least chapters 1-3: ${chapters}`);
    assert.deepEqual(chapters.slice(0, 3), ['ch1', 'ch2', 'ch3']);
    const toc = await page.$$eval('[data-testid="toc"] .toc-ch', (lis) => lis.map((li) => ({ id: li.dataset.chapter, sections: [...li.querySelectorAll('.toc-sections a')].map((a) => a.getAttribute('href')) })));
    assert.deepEqual(toc.map((c) => c.id), chapters);
    for (const c of toc) {
      const ids = await page.$$eval(`#${c.id} > section`, (ss) => ss.map((s) => `#${s.id}`));
      assert.deepEqual(c.sections, ids, `TOC sections of ${c.id}`);
    }
    const ids = await page.$$eval('[id]', (es) => es.map((e) => e.id));
    const dupes = [...new Set(ids.filter((id, i) => ids.indexOf(id) !== i))];
    assert.deepEqual(dupes, [], 'ids are unique on the page');
    assert.equal(await page.getAttribute('.toc-ch[data-chapter="ch1"]', 'class'), 'toc-ch is-current');

    await page.locator('#c3-saturation').scrollIntoViewIfNeeded();
    await page.evaluate(() => document.getElementById('c3-saturation').scrollIntoView({ block: 'start' }));
    await page.waitForFunction(() => document.querySelector('.toc-ch[data-chapter="ch3"]')?.classList.contains('is-current'));
    assert.equal(await page.getAttribute('[data-testid="toc"] a[href="#c3-saturation"]', 'aria-current'), 'true');
    assert.equal(await page.isVisible('[data-testid="toc"] a[href="#worked"]'), false, 'other chapters collapse to their titles');
    noProblems(problems);
  } finally {
    await close();
  }
});

test('chapters keep their own URL keys: changing one chapter does not drop another chapter\'s state', async () => {
  const { page, problems, close } = await env.open('?score=additive&c2.alpha=0.5&c3.lk=8');
  try {
    await page.locator('[data-testid="figure-c2-grid"] [data-testid="c2-dh"]').fill('9');
    await page.waitForFunction(() => /c2\.dh=9/.test(location.search));
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
