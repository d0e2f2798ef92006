// tests/e2e/chapter-loading.test.mjs — the page is built as soon as the chapter its address
// names has arrived (web/src/main.ts, app.ts): the other chapters load afterwards, one at a
// time, and fill in their contents entries and previous/next links as they arrive. Here one
// chapter's module is held back (or fails) by intercepting its request: the shown chapter
// works meanwhile, the held chapter's entry says it is loading, its page shows a status line
// until the module arrives and then the chapter itself; a failed chapter says so in the
// contents and on its page, in the reader's language; an address that does not name its
// chapter for certain (an old section anchor) waits for every chapter, then opens there. The
// reader going to a chapter not yet loaded fetches it ahead of the queue; its arrival keeps
// the reader's focus, open contents panel and the section a link named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { noProblems, usePage } from './chapter-helpers.mjs';

const env = usePage();
const CH5 = /\/assets\/ch5-masks-[^/]+\.js$/;
const CH3 = /\/assets\/ch3-scaling-[^/]+\.js$/;

/** Holds requests matching `pattern` until release() is called. */
function hold(pattern) {
  let release;
  const released = new Promise((r) => (release = r));
  let seen = 0;
  return {
    setup: (context) => context.route(pattern, async (route) => {
      seen++;
      await released;
      await route.continue();
    }),
    release: () => release(),
    seen: () => seen,
  };
}

const tocEntry = async (page, id) => (await page.textContent(`[data-testid="toc"] li[data-chapter="${id}"] > a`)).trim();
const appData = (page) => page.evaluate(() => ({ ...document.getElementById('app').dataset }));

test('a chapter still loading: the shown chapter works, its contents entry says loading, its page fills in on arrival', async () => {
  const ch5 = hold(CH5);
  const { page, problems, close } = await env.open('#ch1', { setup: ch5.setup, wait: 'ready' });
  try {
    // Chapter 1 answers while chapter 5 is held back.
    await page.waitForFunction(() => document.querySelector('[data-testid="toc"] li[data-chapter="ch4"] > a')?.textContent.includes('Chapter 4 '));
    for (let t = 0; t < 100 && ch5.seen() === 0; t++) await page.waitForTimeout(50);
    assert.ok(ch5.seen() >= 1, 'chapter 5 was requested');
    assert.notEqual((await appData(page)).chapters, 'all');
    assert.match(await tocEntry(page, 'ch5'), /^Chapter 5\s+Loading…$/);
    assert.doesNotMatch(await tocEntry(page, 'ch2'), /Loading/, 'chapters before it have arrived and show their titles');
    const tau = () => page.evaluate(() => /τ = ([\d.]+)/.exec(document.querySelector('[data-testid="figure-1"]').textContent)?.[1]);
    const before = await tau();
    await page.locator('#fig1-tau').focus();
    await page.keyboard.press('ArrowRight');
    await page.waitForFunction((b) => /τ = ([\d.]+)/.exec(document.querySelector('[data-testid="figure-1"]').textContent)?.[1] !== b, before);

    // Its page meanwhile: a status line, in the article.
    await page.click('[data-testid="toc"] a[href="#ch5"]');
    const status = page.locator('[data-testid="chapter-loading"]');
    await status.waitFor({ state: 'visible' });
    assert.equal(await status.getAttribute('role'), 'status');
    assert.equal(await page.locator('article.chapter').getAttribute('id'), 'ch5');

    // On arrival: the chapter itself, its entry, and every chapter after it.
    ch5.release();
    await page.waitForFunction(() => document.getElementById('app').dataset.chapters === 'all');
    await page.locator('[data-testid="chapter-title"]').waitFor();
    const title = await page.textContent('[data-testid="chapter-title"]');
    assert.ok(title.length > 3);
    assert.equal(await status.count(), 0);
    assert.match(await tocEntry(page, 'ch5'), new RegExp(`^Chapter 5\\s+${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    assert.match(await page.textContent('[data-testid="chapter-next"]'), /Chapter 6\s+\S/);
    assert.doesNotMatch(await page.textContent('[data-testid="toc"]'), /Loading/);
    // The router finds "#chN" before chapter N has loaded: ids follow the registry's order.
    const ids = await page.$$eval('[data-testid="toc"] .toc-ch', (lis) => lis.map((li) => li.dataset.chapter));
    assert.deepEqual(ids, ids.map((_, i) => `ch${i + 1}`));
    assert.deepEqual(await page.$$eval('[data-testid="toc"] .toc-ch-link', (as) => as.map((a) => a.getAttribute('href'))), ids.map((id) => `#${id}`));
    assert.ok(await page.locator('article#ch5 figure').count() > 0, 'chapter 5 drew its figures');
    // Focus was on the loading page (its main region): it moves to the chapter's title.
    assert.ok(await page.evaluate(() => document.activeElement?.matches('main h1')), 'focus on the arrived chapter\'s title');
    noProblems(problems);
  } finally {
    ch5.release();
    await close();
  }
});

test('a chapter that fails to load: its entry and its page say so, in Chinese on the Chinese page; the others work', async () => {
  const { page, problems, close } = await env.open('?lang=zh#ch2', { setup: (c) => c.route(CH3, (r) => r.abort()) });
  try {
    assert.equal(await tocEntry(page, 'ch3'), '第 3 章（无法加载）');
    assert.match(await tocEntry(page, 'ch4'), /^第 4 章\s+\S/);
    assert.match(await page.textContent('[data-testid="chapter-next"]'), /第 3 章（无法加载）/);
    await page.click('[data-testid="chapter-next"]');
    await page.locator('[data-testid="chapter-error"]').waitFor({ state: 'visible' });
    assert.equal(await page.locator('[data-testid="chapter-error"]').getAttribute('role'), 'alert');
    assert.match(await page.textContent('[data-testid="chapter-error"]'), /^本章无法显示：/);
    await page.click('[data-testid="chapter-next"]');
    await page.locator('article#ch4 [data-testid="chapter-title"]').waitFor();
    // What the one aborted request leaves on the console (the failed request itself names ch3's chunk).
    const expected = (p) => /ch3-scaling/.test(p) || /Failed to load resource: net::ERR_FAILED|Failed to fetch dynamically imported module|error loading dynamically imported module/.test(p);
    assert.ok(problems.length > 0, 'the failure is reported on the console');
    noProblems(problems.filter((p) => !expected(p)));
  } finally {
    await close();
  }
});

test('an old section anchor waits for every chapter, then opens its chapter at that section', async () => {
  const ch5 = hold(CH5);
  const { page, problems, close } = await env.open('#c5-alibi', { setup: ch5.setup, wait: 'none' });
  try {
    await page.waitForFunction(() => document.querySelector('[data-testid="app-status"]'));
    await page.waitForTimeout(800);
    assert.equal((await appData(page)).ready, undefined, 'not built while the chapter that holds the anchor is missing');
    ch5.release();
    await page.waitForFunction(() => document.getElementById('app').dataset.ready === 'true');
    assert.equal((await appData(page)).chapters, 'all');
    assert.equal(await page.locator('article.chapter').getAttribute('id'), 'ch5');
    await page.waitForFunction(() => Math.abs(document.getElementById('c5-alibi').getBoundingClientRect().top) < 80);
    noProblems(problems);
  } finally {
    ch5.release();
    await close();
  }
});

test('the reader goes to a chapter queued behind a stalled one: it is fetched at once, and gets the focus on arrival', async () => {
  const ch3 = hold(CH3);
  const { page, problems, close } = await env.open('#ch1', { setup: ch3.setup, wait: 'ready' });
  try {
    for (let t = 0; t < 100 && ch3.seen() === 0; t++) await page.waitForTimeout(50);
    assert.ok(ch3.seen() >= 1, 'chapter 3 was requested');
    const last = await page.$$eval('[data-testid="toc"] .toc-ch', (lis) => lis.at(-1).dataset.chapter);
    const t0 = Date.now();
    await page.click(`[data-testid="toc"] a[href="#${last}"]`);
    // The background queue would reach it only after chapter 3 (held) and the ones between.
    await page.locator(`article#${last} [data-testid="chapter-title"]`).waitFor({ timeout: 3000 });
    assert.ok(Date.now() - t0 < 3000, `the last chapter shown ${Date.now() - t0} ms after the click`);
    assert.match(await tocEntry(page, 'ch3'), /Loading/, 'chapter 3 is still held');
    await page.waitForFunction(() => document.activeElement?.matches('main h1'));
    noProblems(problems);
  } finally {
    ch3.release();
    await close();
  }
});

test('a section link into a loading chapter: lands on the section on arrival; the open contents panel and its focused link survive (390 px)', async () => {
  const ch5 = hold(CH5);
  const { page, problems, close } = await env.open('#ch1', { setup: ch5.setup, wait: 'ready', viewport: { width: 390, height: 844 } });
  try {
    await page.evaluate(() => window.scrollTo(0, 2000));
    await page.waitForTimeout(400); // past the debounce that saves the reading place
    await page.evaluate(() => { location.hash = '#c5-alibi'; });
    await page.locator('[data-testid="chapter-loading"]').waitFor({ state: 'visible' });
    await page.waitForTimeout(400);
    await page.click('[data-testid="toc-toggle"]');
    await page.locator('[data-testid="toc"] a[href="#ch2"]').focus();
    ch5.release();
    await page.locator('article#ch5 [data-testid="chapter-title"]').waitFor();
    assert.equal(await page.getAttribute('[data-testid="toc-toggle"]', 'aria-expanded'), 'true', 'the contents panel stays open');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('href')), '#ch2', 'focus stays on the same contents link');
    await page.waitForFunction(() => Math.abs(document.getElementById('c5-alibi').getBoundingClientRect().top) < 80, null, { timeout: 5000 });
    noProblems(problems);
  } finally {
    ch5.release();
    await close();
  }
});

test('the contents panel opened without focusing its button stays open when the chapter arrives; focus goes to the button', async () => {
  const ch5 = hold(CH5);
  const { page, problems, close } = await env.open('#ch1', { setup: ch5.setup, wait: 'ready', viewport: { width: 390, height: 844 } });
  try {
    await page.evaluate(() => { location.hash = '#ch5'; });
    await page.locator('[data-testid="chapter-loading"]').waitFor({ state: 'visible' });
    // As in Safari, where a click does not focus a button: focus stays on the loading page.
    await page.evaluate(() => document.querySelector('[data-testid="toc-toggle"]').click());
    assert.equal(await page.getAttribute('[data-testid="toc-toggle"]', 'aria-expanded'), 'true');
    ch5.release();
    await page.locator('article#ch5 [data-testid="chapter-title"]').waitFor();
    assert.equal(await page.getAttribute('[data-testid="toc-toggle"]', 'aria-expanded'), 'true', 'the contents panel stays open');
    assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'toc-toggle');
    noProblems(problems);
  } finally {
    ch5.release();
    await close();
  }
});
