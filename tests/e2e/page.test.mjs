// tests/e2e/page.test.mjs — the built tutorial page (web/dist via `vite preview`) in
// headless Chromium: chapter 1 with the worked example (docs/facts.md §1), the
// scoring-function selector, masks, inline errors, the language switch, and screenshots
// (test-results/*.png). Needs `npm run build:wasm && npm run build:web` first.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { launchChromium, loadCore, repoRoot, startPreview } from './server.mjs';
import { recordFailedRequests } from './chapter-helpers.mjs';

const ARTIFACTS = join(repoRoot, 'test-results');
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };

let server;
let browser;

before(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  server = await startPreview();
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Opens the page, collecting console errors, page errors and failed requests. */
async function open(query = '', viewport = DESKTOP) {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1, colorScheme: 'light' });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(`console.error: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  recordFailedRequests(page, problems);
  page.on('response', (r) => r.status() >= 400 && problems.push(`HTTP ${r.status()}: ${r.url()}`));
  await page.goto(server.url + query);
  await page.waitForFunction(() => document.getElementById('app')?.dataset.ready, null, { timeout: 20000 });
  const ready = await page.evaluate(() => document.getElementById('app').dataset.ready);
  assert.equal(ready, 'true', `page failed to load: ${await page.textContent('#app')}\n${problems.join('\n')}`);
  return { page, problems, close: () => context.close() };
}

/** Cells of a heatmap: [{ i, j, text, value, masked }], row-major. */
function cells(page, testid) {
  return page.$$eval(`[data-testid="${testid}"] g.cell`, (gs) =>
    gs
      .map((g) => ({
        i: Number(g.dataset.i),
        j: Number(g.dataset.j),
        text: g.querySelector('text').textContent,
        value: Number(g.dataset.value),
        masked: g.dataset.masked === 'true',
        fill: g.querySelector('rect').getAttribute('fill'),
      }))
      .sort((a, b) => a.i - b.i || a.j - b.j),
  );
}

function rowTexts(cs, i) {
  return cs.filter((c) => c.i === i).map((c) => c.text);
}

function noProblems(problems) {
  assert.deepEqual(problems, [], `console or page errors:\n${problems.join('\n')}`);
}

test('worked example: weights row 1 is [0.5065, 0.1863, 0.3072] and its largest weight is on key 1', async () => {
  const { page, problems, close } = await open();
  try {
    const w = await cells(page, 'heatmap-weights');
    assert.equal(w.length, 9, 'weights heatmap is 3 x 3');
    assert.ok(w.some((c) => c.text === '0.5065'), `0.5065 not in weights heatmap: ${w.map((c) => c.text)}`);
    assert.deepEqual(rowTexts(w, 0), ['0.5065', '0.1863', '0.3072']);
    assert.deepEqual(rowTexts(w, 1), ['0.1863', '0.5065', '0.3072']);
    assert.deepEqual(rowTexts(w, 2), ['0.2741', '0.2741', '0.4519']);
    const row1 = w.filter((c) => c.i === 0).map((c) => c.value);
    assert.equal(row1.indexOf(Math.max(...row1)), 0, 'token 1 attends most to itself (key 1), not to token 3');
    assert.ok(w.every((c) => !c.masked && !c.fill.startsWith('url(')), 'no masked (hatched) cells by default');

    const s = await cells(page, 'heatmap-scores');
    assert.deepEqual(rowTexts(s, 0), ['1.0000', '0.0000', '0.5000'], 'S = X X^T / 2');
    const o = await cells(page, 'output-matrix');
    assert.equal(o.length, 12, 'output is 3 x 4');
    assert.deepEqual(rowTexts(o, 0), ['0.8137', '0.4935', '0.5065', '0.1863']);
    assert.deepEqual(rowTexts(o, 2), ['0.7259', '0.7259', '0.2741', '0.2741']);

    const stats = await page.$$eval('[data-testid="row-stats"] tbody tr', (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
    assert.deepEqual(stats[0].slice(0, 3), ['1', '0.5065', '1'], 'row 1: max weight 0.5065 on key 1');

    // The prose numbers are live too, and the erratum quotes the wrong row.
    const worked = await page.textContent('[data-testid="section-worked"]');
    assert.match(worked, /0\.5065/);
    assert.match(worked, /0\.8137/);
    const erratum = await page.textContent('[data-testid="section-erratum"]');
    assert.match(erratum, /0\.387/);
    assert.match(erratum, /0\.5065/);
    assert.equal(await page.getAttribute('html', 'lang'), 'en');

    await page.screenshot({ path: join(ARTIFACTS, 'page-desktop-en.png'), fullPage: true });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('the score selector lists the core registry, and switching to additive changes the weights', async () => {
  const qk = await loadCore();
  const { page, problems, close } = await open();
  try {
    const options = await page.$$eval('[data-testid="score-select"] option', (os) => os.map((o) => o.value));
    assert.deepEqual(options, qk.scoreFunctions.map((f) => f.name), 'options come from qk.scoreFunctions, in order');
    assert.equal(await page.inputValue('[data-testid="score-select"]'), 'scaled_dot');
    assert.equal(await page.isVisible('[data-testid="seed"]'), false, 'scaled dot has no parameters, so no seed');

    const before = rowTexts(await cells(page, 'heatmap-weights'), 0);
    await page.selectOption('[data-testid="score-select"]', 'additive');
    await page.waitForFunction(
      (b) => [...document.querySelectorAll('[data-testid="heatmap-weights"] g.cell[data-i="0"] text')].map((t) => t.textContent).join() !== b,
      before.join(),
    );
    const w = await cells(page, 'heatmap-weights');
    const after = rowTexts(w, 0);
    assert.notDeepEqual(after, before);
    for (let i = 0; i < 3; i++) {
      const sum = w.filter((c) => c.i === i).reduce((a, c) => a + c.value, 0);
      assert.ok(Math.abs(sum - 1) < 1e-5, `additive weights row ${i + 1} sums to 1 (got ${sum})`);
    }
    assert.match(await page.textContent('[data-testid="formula"]'), /tanh/);
    assert.equal(await page.isVisible('[data-testid="seed"]'), true, 'additive has parameters, so the seed shows');
    assert.match(page.url(), /[?&]score=additive(&|$)/);

    // Reset brings back the worked example.
    await page.click('[data-testid="reset"]');
    assert.equal(await page.inputValue('[data-testid="score-select"]'), 'scaled_dot');
    assert.deepEqual(rowTexts(await cells(page, 'heatmap-weights'), 0), ['0.5065', '0.1863', '0.3072']);
    assert.doesNotMatch(page.url(), /score=/);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('the language switch shows the chapter in Chinese, keeps the numbers, and is kept in the URL', async () => {
  const { page, problems, close } = await open();
  try {
    await page.click('[data-testid="lang-switch"] [data-testid="lang-zh"]');
    await page.waitForFunction(() => /注意力分数/.test(document.querySelector('h1')?.textContent ?? ''));
    assert.equal(await page.textContent('h1'), '什么是注意力分数');
    assert.equal(await page.getAttribute('html', 'lang'), 'zh-CN');
    assert.match(page.url(), /[?&]lang=zh(&|$)/);
    const h2s = await page.$$eval('h2', (hs) => hs.map((h) => h.textContent));
    assert.ok(h2s.length >= 4 && h2s.every((t) => /[\u4e00-\u9fff]/.test(t)), `all section headings in Chinese: ${h2s}`);
    assert.equal(await page.getAttribute('[data-testid="lang-zh"]', 'aria-pressed'), 'true');
    assert.deepEqual(rowTexts(await cells(page, 'heatmap-weights'), 0), ['0.5065', '0.1863', '0.3072']);
    assert.match(await page.textContent('[data-testid="figure-1"]'), /注意力权重/);
    await page.screenshot({ path: join(ARTIFACTS, 'page-desktop-zh.png'), fullPage: true });

    // Reload keeps the language (state is in the URL); switching back restores English.
    await page.reload();
    await page.waitForFunction(() => document.getElementById('app')?.dataset.ready === 'true');
    assert.equal(await page.textContent('h1'), '什么是注意力分数');
    await page.click('[data-testid="lang-en"]');
    assert.equal(await page.textContent('h1'), 'What a score is');
    assert.doesNotMatch(page.url(), /lang=/);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('state in the URL: causal mask and key padding draw hatched cells with zero weight', async () => {
  const { page, problems, close } = await open('?causal=1&klen=2&tau=2');
  try {
    assert.equal(await page.isChecked('[data-testid="causal"]'), true);
    assert.equal(await page.inputValue('[data-testid="key-length"]'), '2');
    const w = await cells(page, 'heatmap-weights');
    const expectMasked = (i, j) => j > i || j >= 2;
    for (const c of w) {
      assert.equal(c.masked, expectMasked(c.i, c.j), `weights (${c.i + 1}, ${c.j + 1}) masked`);
      if (c.masked) {
        assert.equal(c.text, '', 'masked cells print no number');
        assert.match(c.fill, /^url\(#.*hatch\)$/, 'masked cells are hatched');
        assert.equal(c.value, 0);
      }
    }
    assert.deepEqual(rowTexts(w, 0), ['1.0000', '', '']);
    const s = await cells(page, 'heatmap-scores');
    assert.ok(s.filter((c) => c.masked).every((c) => c.value === -Infinity), 'masked scores are -Infinity');

    // Out-of-range and garbage values are clamped or ignored, never crash.
    await page.goto(`${server.url}?tau=1e9&klen=99&lq=0&score=nope&q=a,b`);
    await page.waitForFunction(() => document.getElementById('app')?.dataset.ready === 'true');
    assert.equal(await page.inputValue('[data-testid="score-select"]'), 'scaled_dot');
    assert.match(await page.textContent('[data-testid="figure-1"]'), /= 20\.0/);
    assert.equal(await page.inputValue('[data-testid="size-lq"]'), '1');
    noProblems(problems);
  } finally {
    await close();
  }
});

test('editing inputs recomputes, a zero key still gets weight, and forward errors show inline', async () => {
  const { page, problems, close } = await open();
  try {
    for (let j = 0; j < 4; j++) await page.fill(`[data-testid="matrix-k"] input[data-i="2"][data-j="${j}"]`, '0');
    const w = await cells(page, 'heatmap-weights');
    assert.ok(w[2].value > 0.2, `a zeroed key still gets weight (${w[2].value})`);
    assert.equal(w[2].text, (await page.textContent('[data-testid="section-pipeline"]')).match(/0\.\d{4}/)?.[0], 'matches the prose');
    assert.match(page.url(), /[?&]k=/);

    // d_q != d_k is an error for dot-product scores: shown politely, charts kept and dimmed.
    await page.selectOption('[data-testid="size-dk"]', '3');
    const alert = page.locator('[data-testid="forward-error"]');
    await alert.waitFor({ state: 'visible' });
    assert.equal(await alert.getAttribute('role'), 'alert');
    assert.match(await alert.textContent(), /d_k|width|dimension/i);
    assert.equal(await page.$$eval('.charts.stale', (e) => e.length), 1);
    assert.match(await alert.textContent(), /last valid result/);
    await page.selectOption('[data-testid="score-select"]', 'bilinear');
    await alert.waitFor({ state: 'hidden' });
    assert.equal(await page.$$eval('.charts.stale', (e) => e.length), 0);

    // Opened directly in an invalid configuration: the alert, no charts, no crash.
    await page.goto(`${server.url}?dk=3`);
    await page.waitForFunction(() => document.getElementById('app')?.dataset.ready === 'true');
    await alert.waitFor({ state: 'visible' });
    assert.doesNotMatch(await alert.textContent(), /last valid result/);
    assert.match(await alert.textContent(), /Bilinear/, 'the hint names the functions that accept d_q != d_k (from the registry)');
    assert.equal(await page.isVisible('[data-testid="heatmap-weights"]'), false);

    // On the Chinese page the core's (English) message is rewritten in Chinese, numbers kept.
    await page.goto(`${server.url}?lang=zh&dk=3`);
    await page.waitForFunction(() => document.getElementById('app')?.dataset.ready === 'true');
    await alert.waitFor({ state: 'visible' });
    const zh = await alert.textContent();
    assert.match(zh, /点积评分要求查询与键的宽度 d 相同，但 d_q = 4，d_k = 3/);
    assert.doesNotMatch(zh, /must|width|got/, `no English sentence: ${zh}`);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('heatmap cells are keyboard focusable with aria-label readouts and a tooltip', async () => {
  const { page, problems, close } = await open();
  try {
    const first = page.locator('[data-testid="heatmap-weights"] g.cell[tabindex="0"]');
    assert.equal(await first.count(), 1, 'one tab stop per heatmap');
    await first.focus();
    assert.match(await first.getAttribute('aria-label'), /query 1, key 1: 0\.5065/);
    await page.keyboard.press('ArrowRight');
    const label = await page.evaluate(() => document.activeElement.getAttribute('aria-label'));
    assert.match(label, /query 1, key 2: 0\.1863/);
    assert.match(await page.textContent('[data-testid="heatmap-weights"] .tooltip.visible'), /query 1, key 2/);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('heatmap cells get their new aria-labels even when no frame callback runs', async () => {
  // The labels wait for the frame after an update (web/src/charts/heatmap-labels.ts). Headless
  // Chromium on a loaded machine has stopped producing frames for seconds, and axe-core then
  // found every cell unnamed; a timer bounds the wait. Here no frame callback runs after the stub.
  const { page, problems, close } = await open();
  try {
    const cells = '[data-testid="heatmap-weights"] g.cell';
    // A visible page (a hidden one writes labels at once), and no pass left pending from the load:
    // one real frame, then a task.
    assert.equal(await page.evaluate(() => document.visibilityState), 'visible');
    await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0))));
    const before = await page.$$eval(cells, (gs) => gs.map((g) => g.getAttribute('aria-label')));
    assert.ok(before.length > 1 && before.every((l) => l), 'every cell is labelled at load');
    await page.evaluate(() => { window.requestAnimationFrame = () => 0; });
    await page.locator('#fig1-tau').evaluate((el) => {
      el.value = String(Number(el.min) + 0.4 * (Number(el.max) - Number(el.min)));
      el.dispatchEvent(new Event('input', { bubbles: true }));
    });
    const values = await page.$$eval(cells, (gs) => gs.map((g) => Number(g.dataset.value)));
    const labelled = (sel) => [...document.querySelectorAll(sel)].every((g) => g.getAttribute('aria-label')?.includes(Number(g.dataset.value).toFixed(4)));
    await page.waitForFunction(labelled, cells, { timeout: 5000 }).catch(() => {});
    const after = await page.$$eval(cells, (gs) => gs.map((g) => g.getAttribute('aria-label')));
    assert.notDeepEqual(after, before, 'the labels changed with the values (drawn by the input itself)');
    for (const [k, label] of after.entries())
      assert.ok(label?.includes(values[k].toFixed(4)), `cell ${k}: label "${label}" names its value ${values[k].toFixed(4)}`);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('phone width: no horizontal page overflow; screenshot', async () => {
  const { page, problems, close } = await open('', PHONE);
  try {
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `page scrolls sideways by ${overflow}px at 390px`);
    await page.screenshot({ path: join(ARTIFACTS, 'page-phone-en.png'), fullPage: true });
    await page.screenshot({ path: join(ARTIFACTS, 'page-phone-en-figure.png'), clip: await page.locator('[data-testid="figure-1"]').boundingBox() ?? undefined, fullPage: true });
    noProblems(problems);
  } finally {
    await close();
  }
});
