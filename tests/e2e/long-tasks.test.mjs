// tests/e2e/long-tasks.test.mjs — the tutorial's long computations never block the page:
// chapter 3's Monte Carlo run and saturation curves (L_k dragged) and chapter 7's timing runs
// (the naive, tiled and JavaScript broadcast paths up to L = 1024, additive up to L = 256 with
// d_h = 64) run in the page's Web Worker (web/src/worker/). Measured with the Long Animation
// Frames API from the moment the page is ready, on the production build in headless
// Chromium: no script on the page's thread runs longer than 50 ms (the Long Tasks API's
// threshold; issue 11), so no computation blocks it. Frames longer than 50 ms because of
// style, layout and paint (a chart appearing on a long page) are printed, not asserted
// (native/bench/NOTES.md, "Long tasks"); the page's load is printed too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { noProblems, usePage } from './chapter-helpers.mjs';

const env = usePage();
/** A main-thread task longer than this blocks the page (the Long Tasks API reports only these). */
const LONG_MS = 50;

/** Keeps every animation frame over 50 ms, with the scripts that ran in it, from before any page script. */
function recordLongFrames() {
  window.__longTasks = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      // Animation-frame callbacks without a source are the test driver's (Playwright's
      // injected actionability checks); the page's own always name their bundle. (Timer and
      // promise continuations of the page carry no source either: those count.)
      const scripts = e.scripts.filter((x) => x.sourceURL || x.invoker !== 'FrameRequestCallback').map((x) => ({ ms: x.duration, what: `${x.invoker} ${x.sourceFunctionName || ''} ${x.sourceURL.split('/').pop()}:${x.sourceCharPosition}` }));
      window.__longTasks.push({ start: e.startTime, ms: e.duration, render: e.renderStart ? e.startTime + e.duration - e.renderStart : 0, scripts });
    }
  }).observe({ type: 'long-animation-frame', buffered: true });
}

/** Opens `query` with the recorder installed; `since` gives the long frames after the page was ready. */
async function openRecorded(query) {
  const { page, problems, close } = await env.open(query, { init: recordLongFrames });
  // Two frames and a quiet moment: what the load itself did is behind us.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 300)))));
  const readyAt = await page.evaluate(() => performance.now());
  /** Long frames that started after `from` (default: the page was ready). */
  const since = async (from = readyAt) => (await page.evaluate(() => window.__longTasks)).filter((t) => t.start >= from);
  const now = () => page.evaluate(() => performance.now());
  const atLoad = (await page.evaluate(() => window.__longTasks)).filter((t) => t.start < readyAt);
  return { page, problems, since, now, atLoad, close };
}

const describe = (tasks) => tasks.map((t) => `${t.ms.toFixed(0)} ms at ${t.start.toFixed(0)} ms (rendering ${t.render.toFixed(0)} ms, longest script ${Math.max(0, ...t.scripts.map((x) => x.ms)).toFixed(0)} ms)`).join('; ') || 'none';
/** Scripts over LONG_MS in those frames: computations the page's thread must not run. */
const longScripts = (tasks) => tasks.flatMap((t) => t.scripts.filter((x) => x.ms > LONG_MS).map((x) => `${x.ms.toFixed(0)} ms: ${x.what}`));

/**
 * Runs `scenario` (it opens a page, drives it and returns the long frames that count); a run
 * with a script over LONG_MS is repeated once and the second run decides. A computation put on
 * the page's thread is over the bound in every run (a build without the worker: dozens of
 * 55-615 ms scripts); a single 50-55 ms timer continuation (seen once in ~10 runs here, a
 * garbage collection or the shared machine) is not what this test is about.
 */
async function eachScriptUnder(scenario) {
  let long = await scenario();
  if (longScripts(long).length) {
    console.log(`first run: ${longScripts(long).join('; ')}; running the scenario again`);
    long = await scenario();
  }
  assert.deepEqual(longScripts(long), [], `scripts over ${LONG_MS} ms on the page's thread; long frames: ${describe(long)}`);
}

test('chapter 3: the Monte Carlo run and the saturation curves (L_k dragged) never block the page', () => eachScriptUnder(async () => {
  const { page, problems, since, atLoad, close } = await openRecorded('?c3.samples=100000#ch3');
  try {
    await page.locator('[data-testid="c3-progress"]').scrollIntoViewIfNeeded();
    await page.waitForFunction(() => document.querySelector('[data-testid="c3-progress"]')?.dataset.done === 'true', null, { timeout: 120000 });
    assert.match(await page.textContent('[data-testid="c3-progress"]'), /100\u2009352 pairs/);
    const lk = page.locator('[data-testid="c3-lk"]');
    await lk.scrollIntoViewIfNeeded();
    for (const v of ['40', '41', '42', '50', '60', '64']) await lk.fill(v);
    await page.waitForSelector('[data-testid="c3-sat-summary"][data-lk="64"]', { timeout: 60000 });
    const long = await since();
    console.log(`chapter 3: long frames at load ${describe(atLoad)}; while running ${describe(long)}`);
    noProblems(problems);
    return long;
  } finally {
    await close();
  }
}));

test('chapter 7: the timing runs (naive, tiled, broadcast up to L = 1024; additive at d_h = 64) never block the page', () => eachScriptUnder(async () => {
  const { page, problems, since, now, atLoad, close } = await openRecorded('?c7.pathL=1024&c7.addL=256&c7.dh=64#ch7');
  try {
    const done = (id) => page.waitForFunction((id) => document.querySelector(`[data-testid="${id}"]`)?.dataset.done === 'true', id, { timeout: 240000 });
    // The figures draw as they come into view and each runs a quick preview (L <= 256) on its own.
    for (const [run, status] of [['c7-run', 'c7-status'], ['c7-paths-run', 'c7-paths-status'], ['c7-add-run', 'c7-add-status']]) {
      await page.locator(`[data-testid="${run}"]`).scrollIntoViewIfNeeded();
      await done(status);
    }
    const drawn = await now();
    const previews = await since();
    // The full runs, one after the other, while the reader stays on the page.
    for (const [run, status] of [['c7-paths-run', 'c7-paths-status'], ['c7-add-run', 'c7-add-status']]) {
      await page.locator(`[data-testid="${run}"]`).scrollIntoViewIfNeeded();
      await page.locator(`[data-testid="${run}"]`).click();
      await done(status);
    }
    assert.equal(await page.evaluate(() => document.querySelector('[data-testid="c7-paths-summary"]')?.dataset.L), '1024', 'figure 7.2 ran to L = 1024');
    const long = await since(drawn);
    console.log(`chapter 7: long frames at load ${describe(atLoad)}; while the figures drew and previewed ${describe(previews)}; during the full runs ${describe(long)}`);
    noProblems(problems);
    return long;
  } finally {
    await close();
  }
}));
