// tests/e2e/chapter-helpers.mjs — shared setup for the chapter tests (chN.test.mjs): the
// built page served by `vite preview` (server.mjs), headless Chromium, a page that records
// console errors, page errors, failed requests and dialogs, and helpers for exports and
// screenshots. Not a test file itself (node --test runs *.test.mjs only).
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { launchChromium, repoRoot, startPreview } from './server.mjs';

export const ARTIFACTS = join(repoRoot, 'test-results');
export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 390, height: 844 };

/** Registers before/after hooks; returns a handle whose .server and .browser are set once started. */
export function usePage() {
  const env = { server: null, browser: null };
  before(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    env.server = await startPreview();
    env.browser = await launchChromium();
  });
  after(async () => {
    await env.browser?.close();
    await env.server?.close();
  });

  /**
   * Opens the page at `query` (e.g. '?c2.alpha=0#ch2'); waits until it is ready.
   * options: viewport, reducedMotion ('reduce' | 'no-preference'), colorScheme, init (a
   * function run in the page before any of its scripts: a recorder, context.addInitScript),
   * setup (async (context) => {}, before navigation: e.g. context.route to hold or fail a
   * request), wait ('all': built and every chapter arrived, the default; 'ready': built;
   * 'none': just navigated).
   */
  env.open = async (query = '', { viewport = DESKTOP, reducedMotion = 'no-preference', colorScheme = 'light', init = null, setup = null, wait = 'all' } = {}) => {
    const context = await env.browser.newContext({ viewport, deviceScaleFactor: 1, colorScheme, reducedMotion, acceptDownloads: true });
    if (init) await context.addInitScript(init);
    if (setup) await setup(context);
    const page = await context.newPage();
    const problems = [];
    page.on('console', (m) => m.type() === 'error' && problems.push(`console.error: ${m.text()}`));
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('crash', () => problems.push('the page crashed (renderer process gone)'));
    recordFailedRequests(page, problems);
    page.on('response', (r) => r.status() >= 400 && problems.push(`HTTP ${r.status()}: ${r.url()}`));
    page.on('dialog', (d) => {
      problems.push(`dialog: ${d.message()}`);
      void d.dismiss();
    });
    await page.goto(env.server.url + query);
    if (wait !== 'none') await waitReady(page, { all: wait === 'all' });
    return { page, problems, close: () => context.close() };
  };
  return env;
}

/**
 * Records the page's failed requests in `problems`, except those that a navigation started
 * after them cancelled: the page fetches the chapters it does not show in the background,
 * and a test that goes to another address before they arrive cancels them (net::ERR_ABORTED).
 */
export function recordFailedRequests(page, problems) {
  // A request belongs to the document that was current when it was issued: a navigation is
  // counted when it is requested, a document when it commits, so a chunk the old document
  // asks for while the next one is already on its way also counts as cancelled.
  let requested = 0;
  let committed = 0;
  const issuedBy = new WeakMap();
  page.on('request', (r) => {
    if (r.isNavigationRequest() && r.frame() === page.mainFrame()) requested++;
    else issuedBy.set(r, committed);
  });
  page.on('framenavigated', (f) => {
    if (f === page.mainFrame()) committed = requested;
  });
  page.on('requestfailed', (r) => {
    const text = r.failure()?.errorText ?? '';
    if (text === 'net::ERR_ABORTED' && issuedBy.has(r) && requested > issuedBy.get(r)) return;
    problems.push(`request failed: ${r.url()} ${text}`);
  });
}

/**
 * Waits until the page is built and (with all, the default) every chapter has arrived, so
 * its contents are complete (web/src/app.ts sets #app's data-chapters="all").
 */
export async function waitReady(page, { all = true } = {}) {
  await page.waitForFunction(() => document.getElementById('app')?.dataset.ready, null, { timeout: 20000 });
  const ready = await page.evaluate(() => document.getElementById('app').dataset.ready);
  assert.equal(ready, 'true', `page failed to load: ${await page.textContent('#app')}`);
  if (all) await page.waitForFunction(() => document.getElementById('app')?.dataset.chapters === 'all', null, { timeout: 20000 });
}

export function noProblems(problems) {
  assert.deepEqual(problems, [], `console or page errors:\n${problems.join('\n')}`);
}

/** Cells of a heatmap by test id: [{ i, j, text, value }], row-major. */
export function cells(scope, testid) {
  return scope.locator(`[data-testid="${testid}"] g.cell`).evaluateAll((gs) =>
    gs
      .map((g) => ({ i: Number(g.dataset.i), j: Number(g.dataset.j), text: g.querySelector('text').textContent, value: Number(g.dataset.value) }))
      .sort((a, b) => a.i - b.i || a.j - b.j),
  );
}

/** Clicks the figure's export menu and a format; returns { name, bytes } of the download. */
export async function exportFile(page, figureTestId, format) {
  const fig = page.locator(`[data-testid="${figureTestId}"]`);
  await fig.locator('[data-testid="export"]').click();
  const [download] = await Promise.all([page.waitForEvent('download'), fig.locator(`[data-testid="export-${format}"]`).click()]);
  const path = await download.path();
  return { name: download.suggestedFilename(), bytes: await readFile(path) };
}

/** Asserts the four exports of a figure produce plausible files; returns them by format. */
export async function checkExports(page, figureTestId) {
  const base = `qkscope-${figureTestId.replace(/^figure-/, '')}`;
  const out = {};
  for (const f of ['png', 'svg', 'csv', 'json']) {
    const file = await exportFile(page, figureTestId, f);
    assert.equal(file.name, `${base}.${f}`);
    assert.ok(file.bytes.length > 50, `${f} export is not empty (${file.bytes.length} bytes)`);
    out[f] = file;
  }
  assert.deepEqual([...out.png.bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'PNG signature');
  const svg = out.svg.bytes.toString('utf8');
  assert.match(svg, /<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  assert.doesNotMatch(svg, /class="/, 'styles are inlined, classes removed');
  JSON.parse(out.json.bytes.toString('utf8'));
  return out;
}

/** Asserts that nothing from a hostile URL became markup. */
export async function noInjectedMarkup(page) {
  const n = await page.evaluate(() => document.querySelectorAll('img, script:not([type="module"]), iframe, [onerror], [onload]').length);
  assert.equal(n, 0, 'no element created from URL parameters');
}

/** Absolute path of a file in the repository. */
export function repoRootFile(path) {
  return join(repoRoot, path);
}

/** Pixels by which anything in this chapter sticks out past the viewport (not inside a scroll box). */
export function chapterOverflow(page, id) {
  return page.evaluate((id) => {
    const W = document.documentElement.clientWidth;
    const clipped = (e) => {
      for (let p = e.parentElement; p; p = p.parentElement) if (/(hidden|auto|scroll|clip)/.test(getComputedStyle(p).overflowX)) return true;
      return false;
    };
    let worst = 0;
    for (const e of document.getElementById(id).querySelectorAll('*')) {
      const b = e.getBoundingClientRect();
      if (b.width > 0 && getComputedStyle(e).position !== 'absolute' && !clipped(e)) worst = Math.max(worst, b.right - W);
    }
    return worst;
  }, id);
}

/** Text of an element by test id without KaTeX's MathML copy (which repeats every number), spaces collapsed. */
export function proseText(page, testid) {
  return page.locator(`[data-testid="${testid}"]`).evaluate((e) => {
    const c = e.cloneNode(true);
    c.querySelectorAll('.katex-mathml').forEach((m) => m.remove());
    return c.textContent.replace(/\u200b/g, '').replace(/\s+/g, ' ');
  });
}

const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/**
 * Scrolls through the page so lazy figures draw, then runs axe (with its experimental
 * label-content-name-mismatch rule on: a button's name must contain its visible text);
 * returns violations as lines.
 */
export async function axeViolations(page) {
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  for (let y = 0; y < height; y += 700) {
    await page.evaluate((y) => window.scrollTo(0, y), y);
    await page.waitForTimeout(40);
  }
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.waitForTimeout(300);
  // Then until the page is quiet: figures drawn from a worker's answer (chapter 9's table,
  // chapter 11's model) can land after the wait above on a loaded 2-core machine, and axe
  // would see a half-updated box (a table that scrolls before the next frame names it).
  // Two frames, or 1 s without one: headless Chromium on a loaded machine has stopped
  // producing frames for minutes while the page stayed responsive (a zh / dark run, chapter 6,
  // 2026-12-04), and a wait on frames alone then never returned.
  await page.evaluate(() => new Promise((done) => {
    let timer = 0;
    let over = false;
    const finish = () => { if (!over) { over = true; mo.disconnect(); clearTimeout(cap); done(); } };
    const settle = () => { requestAnimationFrame(() => requestAnimationFrame(finish)); setTimeout(finish, 1000); };
    const mo = new MutationObserver(() => { clearTimeout(timer); timer = setTimeout(settle, 250); });
    const cap = setTimeout(settle, 5000);
    mo.observe(document.body, { childList: true, subtree: true, characterData: true });
    timer = setTimeout(settle, 250);
  }));
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: axePath });
  const violations = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'], rules: { 'label-content-name-mismatch': { enabled: true } } })).violations);
  return violations.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')} — ${n.failureSummary.split('\n').slice(1, 2).join(' ').trim()}`));
}
