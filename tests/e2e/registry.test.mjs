// tests/e2e/registry.test.mjs — the web side follows the core's registries: every scoring
// function and normalizer the wasm module reports (qk.scoreFunctions, qk.normalizers) is
// offered by the tutorial's score selectors and panels, accepted by <qk-scope>'s `score` /
// `normalizer` attributes and controls, and listed on widget.html. A function added to the
// C++ registry that any of these misses fails here. Needs `npm run build:wasm`,
// `npm run build:widget` and `npm run build:web` first.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { launchChromium, loadCore, startPreview } from './server.mjs';

let server;
let browser;
let scores;
let normalizers;

before(async () => {
  const qk = await loadCore();
  scores = qk.scoreFunctions.map((f) => f.name);
  normalizers = qk.normalizers.map((n) => n.name);
  server = await startPreview();
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function open(path) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(server.url + path);
  return { page, problems };
}

const optionValues = (page, selector) => page.$$eval(`${selector} option`, (os) => os.map((o) => o.value));

test('the tutorial offers every registered scoring function, in registry order', async () => {
  const { page, problems } = await open('');
  await page.waitForFunction(() => document.getElementById('app')?.dataset.ready === 'true', null, { timeout: 20000 });
  assert.deepEqual(await optionValues(page, '[data-testid="score-select"]'), scores, 'chapter 1: the score selector');
  await page.goto(`${server.url}#ch2`);
  await page.waitForFunction(() => document.querySelector('article.chapter')?.id === 'ch2');
  assert.deepEqual(await optionValues(page, '[data-testid="c2-a"]'), scores, 'chapter 2: function A');
  assert.deepEqual(await optionValues(page, '[data-testid="c2-b"]'), scores, 'chapter 2: function B');
  const panels = await page.$$eval('[data-testid^="c2-panel-"]', (ps) => ps.map((p) => p.dataset.testid.slice('c2-panel-'.length)));
  assert.deepEqual(panels, scores, 'chapter 2: one panel per function');
  await page.goto(`${server.url}#ch1`);
  await page.waitForFunction(() => document.querySelector('article.chapter')?.id === 'ch1');
  for (const name of scores) {
    await page.selectOption('[data-testid="score-select"]', name);
    await page.waitForFunction((n) => new URLSearchParams(location.search).get('score') === (n === 'scaled_dot' ? null : n), name);
  }
  assert.deepEqual(problems, []);
  await page.close();
});

test('<qk-scope> accepts every registered score and normalizer, and widget.html lists them', async () => {
  const { page, problems } = await open('widget.html');
  await page.waitForFunction(() => document.getElementById('ex-worked')?.shadowRoot?.querySelector('[role=grid]'), null, { timeout: 20000 });
  const shadowOptions = (control) => page.evaluate((c) =>
    [...document.getElementById('ex-worked').shadowRoot.querySelectorAll(`select[data-control=${c}] option`)].map((o) => o.value), control);
  assert.deepEqual(await shadowOptions('score'), scores, 'the score control lists the registry');
  assert.deepEqual(await shadowOptions('normalizer'), normalizers, 'the normalizer control lists the registry');
  for (const [attr, names] of [['score', scores], ['normalizer', normalizers]]) {
    for (const name of names) {
      const cfg = await page.evaluate(([a, n]) => new Promise((resolve) => {
        const w = document.getElementById('ex-worked');
        w.addEventListener('attention-change', (e) => resolve({ value: e.detail.config[a], problems: e.detail.problems }), { once: true });
        w.setAttribute(a, n);
      }), [attr, name]);
      assert.deepEqual(cfg, { value: name, problems: [] }, `${attr}="${name}" is accepted`);
    }
    const listed = await page.textContent(`[data-registry="${attr}"]`);
    assert.deepEqual(listed.split(' | '), names, `widget.html lists the ${attr} values`);
  }
  assert.deepEqual(problems, []);
  await page.close();
});
