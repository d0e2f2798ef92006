// tests/e2e/routes.test.mjs — one page per chapter (web/src/routes.ts, app.ts, shell.ts) on
// the built site: each chapter's URL (#chN) shows that chapter and only it (no other chapter's
// figures are built), previous/next links walk the chapters and the browser's back button
// returns to the place left, the anchors of the single-page edition open their chapter at
// their section, the language switch keeps the chapter, the place and the figures' state,
// the contents menu is a keyboard-usable disclosure on a phone, and no chapter page scrolls
// sideways at 390 px (display formulas scroll inside their box).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PHONE, noProblems, usePage } from './chapter-helpers.mjs';

const env = usePage();

const chapterIds = (page) => page.$$eval('[data-testid="toc"] .toc-ch', (lis) => lis.map((li) => li.dataset.chapter));
const shown = (page) => page.$$eval('article.chapter', (as) => as.map((a) => a.id));
const waitChapter = (page, id) => page.waitForFunction((id) => document.querySelector('article.chapter')?.id === id, id);

/** Scrolls down the page so lazily drawn figures draw, then back to the top. */
async function walk(page) {
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  for (let y = 0; y < height; y += 600) {
    await page.evaluate((y) => window.scrollTo(0, y), y);
    await page.waitForTimeout(30);
  }
  await page.waitForTimeout(200);
}

test('each chapter has its own URL; previous/next walk the chapters in order and land at the top', async () => {
  const { page, problems, close } = await env.open();
  try {
    const ids = await chapterIds(page);
    assert.ok(ids.length >= 9, `chapters: ${ids}`);
    assert.deepEqual(await shown(page), ['ch1'], 'the bare address is chapter 1');
    assert.equal(await page.locator('[data-testid="chapter-prev"]').count(), 0, 'chapter 1 has no previous link');
    for (let i = 1; i < ids.length; i++) {
      await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
      const next = page.locator('[data-testid="chapter-next"]');
      assert.equal(await next.getAttribute('href'), `#${ids[i]}`);
      await next.click();
      await waitChapter(page, ids[i]);
      assert.equal(new URL(page.url()).hash, `#${ids[i]}`);
      assert.ok(await page.evaluate(() => window.scrollY) < 5, `${ids[i]} opens at its top`);
      assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'H1', 'focus moves to the new page\'s title');
      assert.equal(await page.getAttribute('[data-testid="chapter-prev"]', 'href'), `#${ids[i - 1]}`);
      const title = await page.evaluate(() => document.title);
      assert.match(title, / · /, 'the window title names the chapter');
      assert.doesNotMatch(title, /[$\\]/, `no TeX in the window title: ${title}`);
    }
    assert.equal(await page.locator('[data-testid="chapter-next"]').count(), 0, 'the last chapter has no next link');
    // Opening a chapter's URL directly builds that chapter only: the others' figures cost nothing.
    for (const id of ids) {
      await page.goto(`${env.server.url}?c2.alpha=0.5#${id}`);
      await waitChapter(page, id);
      assert.deepEqual(await shown(page), [id]);
      const foreign = await page.$$eval('[data-testid^="figure-"]', (fs, id) => fs.filter((f) => f.closest('article')?.id !== id).length, id);
      assert.equal(foreign, 0, `no figure outside ${id}`);
    }
    noProblems(problems);
  } finally {
    await close();
  }
});

test('back returns to the previous chapter at the place left; the place survives a reload', async () => {
  const { page, problems, close } = await env.open('#ch2');
  try {
    await page.evaluate(() => window.scrollTo(0, 1500));
    await page.waitForTimeout(100);
    const y = await page.evaluate(() => window.scrollY);
    assert.ok(y > 300, `scrolled into chapter 2 (${y})`);
    await page.click('[data-testid="toc"] a[href="#ch4"]');
    await waitChapter(page, 'ch4');
    await page.goBack();
    await waitChapter(page, 'ch2');
    await page.waitForFunction((y) => Math.abs(window.scrollY - y) < 3, y);
    await page.reload();
    await page.waitForFunction(() => document.getElementById('app')?.dataset.ready === 'true');
    await page.waitForFunction((y) => Math.abs(window.scrollY - y) < 3, y);
    await page.goForward();
    await waitChapter(page, 'ch4');
    noProblems(problems);
  } finally {
    await close();
  }
});

test('anchors of the single-page edition open their chapter at their section', async () => {
  for (const [hash, chapter] of [['#c3-saturation', 'ch3'], ['#worked', 'ch1'], ['#c5-alibi', 'ch5'], ['#c8-sparse', 'ch8'], ['#figure-c6-gumbel', 'ch6'], ['#ch6', 'ch6']]) {
    const { page, problems, close } = await env.open(`?lang=zh${hash}`);
    try {
      assert.deepEqual(await shown(page), [chapter], `${hash} opens ${chapter}`);
      await page.waitForTimeout(600);
      if (hash.startsWith('#ch')) continue;
      const top = await page.evaluate((id) => document.getElementById(id).getBoundingClientRect().top, hash.slice(1));
      const header = await page.evaluate(() => document.querySelector('.site-header').getBoundingClientRect().bottom);
      assert.ok(top >= header - 1 && top < header + 40, `${hash}: the section starts just below the sticky header (top ${top}, header ${header})`);
      // The contents link to the section, on this page.
      if (!hash.startsWith('#figure')) assert.equal(await page.locator(`[data-testid="toc"] a[href="${hash}"]`).count(), 1);
      noProblems(problems);
    } finally {
      await close();
    }
  }
});

test('a single-page link with one chapter\'s state and no anchor opens that chapter; mixed state opens chapter 1', async () => {
  for (const [query, chapter] of [['?c5.lq=2&c5.lk=4', 'ch5'], ['?lang=zh&c8.maxL=256', 'ch8'], ['?c2.alpha=0.5&c3.lk=8', 'ch1'], ['?score=additive', 'ch1']]) {
    const { page, problems, close } = await env.open(query);
    try {
      assert.deepEqual(await shown(page), [chapter], `${query} opens ${chapter}`);
      noProblems(problems);
    } finally {
      await close();
    }
  }
});

test('the language switch keeps the chapter, the block being read and the figures\' state', async () => {
  const { page, problems, close } = await env.open('?c5.lq=2&c5.lk=4#ch5');
  try {
    // A paragraph of the ALiBi section just below the sticky header, as when reading it.
    const P = '#c5-alibi .prose > p:nth-of-type(2)';
    await page.evaluate((sel) => {
      const p = document.querySelector(sel);
      window.scrollTo(0, window.scrollY + p.getBoundingClientRect().top - document.querySelector('.site-header').getBoundingClientRect().bottom - 4);
    }, P);
    await page.waitForTimeout(100);
    const top = () => page.evaluate((sel) => ({ top: document.querySelector(sel).getBoundingClientRect().top, y: window.scrollY }), P);
    const before = await top();
    await page.click('[data-testid="lang-zh"]');
    await page.waitForFunction(() => document.documentElement.lang === 'zh-CN');
    assert.deepEqual(await shown(page), ['ch5']);
    const after = await top();
    assert.ok(Math.abs(after.top - before.top) < 2, `the same paragraph stays at the same height (${before.top} -> ${after.top})`);
    assert.ok(after.y > 500, `not back at the top (${after.y})`);
    const url = new URL(page.url());
    assert.equal(url.hash, '#ch5');
    assert.equal(url.searchParams.get('c5.lq'), '2');
    assert.equal(url.searchParams.get('c5.lk'), '4');
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'lang-zh', 'focus stays on the switch');
    noProblems(problems);
  } finally {
    await close();
  }
});

test('phone: the contents are one button away at any scroll position, as a keyboard-usable disclosure', async () => {
  const { page, problems, close } = await env.open('#ch4', { viewport: PHONE });
  try {
    const toggle = page.locator('[data-testid="toc-toggle"]');
    const toc = page.locator('[data-testid="toc"]');
    assert.equal(await toc.isVisible(), false, 'closed, the contents do not fill the first screen');
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    assert.equal(await toggle.getAttribute('aria-controls'), 'toc');
    await page.evaluate(() => window.scrollTo(0, 3000));
    const box = await toggle.boundingBox();
    assert.ok(box && box.y >= 0 && box.y < 60, `the button stays in the sticky header (${JSON.stringify(box)})`);
    await toggle.focus();
    await page.keyboard.press('Enter');
    assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
    assert.equal(await toc.isVisible(), true);
    await page.keyboard.press('Escape');
    assert.equal(await toc.isVisible(), false, 'Escape closes');
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'toc-toggle', 'and returns focus to the button');
    await page.keyboard.press('Space');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => !!document.activeElement?.closest('[data-testid="toc"]')), true, 'Tab goes from the button into the contents');
    // Tabbing past the last entry closes the panel (focus never goes under it).
    const entries = await toc.locator('a').count();
    for (let k = 1; k < entries; k++) await page.keyboard.press('Tab');
    assert.equal(await toc.isVisible(), true, 'open while focus is on its entries');
    await page.keyboard.press('Tab');
    assert.equal(await toc.isVisible(), false, 'closed once focus leaves it');
    await toggle.click();
    await toc.locator('a[href="#ch7"]').click();
    await waitChapter(page, 'ch7');
    assert.equal(await toc.isVisible(), false, 'following a link closes the menu');
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    noProblems(problems);
  } finally {
    await close();
  }
});

for (const lang of ['en', 'zh']) {
  test(`390 px (${lang}): no chapter page scrolls sideways; wide formulas scroll inside their box`, async () => {
    const { page, problems, close } = await env.open(lang === 'zh' ? '?lang=zh' : '', { viewport: PHONE });
    try {
      const wide = [];
      for (const id of await chapterIds(page)) {
        await page.goto(`${env.server.url}${lang === 'zh' ? '?lang=zh' : ''}#${id}`);
        await waitChapter(page, id);
        await walk(page);
        // The boxes are marked from a ResizeObserver callback (app.ts, markScrollers), which a
        // loaded machine can run after the walk (a fresh clone's run beside a fuzz loop read one
        // unmarked): wait for it, bounded, before reading.
        await page
          .waitForFunction(() => [...document.querySelectorAll('.math-display')].every((f) => !(f.scrollWidth > f.clientWidth + 1) || f.tabIndex === 0), null, { timeout: 3000 })
          .catch(() => {});
        const m = await page.evaluate(() => ({
          scroll: document.documentElement.scrollWidth,
          view: document.documentElement.clientWidth,
          formulas: [...document.querySelectorAll('.math-display')].map((f) => ({
            wider: f.scrollWidth > f.clientWidth + 1, tab: f.tabIndex, name: f.getAttribute('aria-label'), right: f.getBoundingClientRect().right,
          })),
        }));
        assert.ok(m.scroll <= m.view, `${id}: document scrollWidth ${m.scroll} > viewport ${m.view}`);
        for (const f of m.formulas) {
          assert.ok(f.right <= m.view, `${id}: a formula box ends past the viewport`);
          if (f.wider) {
            wide.push(id);
            assert.equal(f.tab, 0, `${id}: a formula that scrolls is reachable by keyboard`);
            assert.ok(f.name, `${id}: and named`);
          }
        }
      }
      console.log(`# ${lang}: chapters with a sideways-scrolling formula at 390 px: ${[...new Set(wide)].join(' ') || 'none'}`);
      noProblems(problems);
    } finally {
      await close();
    }
  });
}
