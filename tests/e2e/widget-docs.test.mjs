// tests/e2e/widget-docs.test.mjs — the widget docs page (web/dist/widget.html, built by
// `npm run build:widget && npm run build:web`), served as static files with the policy the
// page documents for the npm build (the minimal one plus connect-src 'self' for the .wasm):
// its live examples render with no console error and no CSP violation, the event log shows
// the worked example's first row, the page works at 390 px (no sideways scrolling, every
// widget within the page), and axe-core finds no violation (injected with the CSP bypassed).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium, repoRoot, serveFiles } from './server.mjs';

const DIST = join(repoRoot, 'web/dist');
const CSP = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; connect-src 'self'";
const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

let server;
let origin;
let browser;

before(async () => {
  if (!existsSync(join(DIST, 'widget.html')))
    throw new Error('web/dist/widget.html is missing: run `npm run build:widget && npm run build:web` first');
  server = await serveFiles((path) => join(DIST, path), { headers: { 'content-security-policy': CSP } });
  origin = server.origin;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Opens the page; `bypassCSP` only where axe-core must be injected (an inline script the policy blocks). */
async function open(viewport, { bypassCSP = false } = {}) {
  const page = await browser.newPage({ viewport, bypassCSP });
  const problems = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('response', (r) => r.status() >= 400 && problems.push(`HTTP ${r.status()}: ${r.url()}`));
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective}: ${e.blockedURI}`));
  });
  await page.goto(`${origin}/widget.html`);
  await page.waitForFunction(() =>
    [...document.querySelectorAll('qk-scope')].every((w) => w.shadowRoot?.querySelector('[role=grid]')), null, { timeout: 20000 });
  const finish = async () => {
    const csp = await page.evaluate(() => window.__csp);
    await page.close();
    assert.deepEqual(csp, [], `CSP violations:\n${csp.join('\n')}`);
    assert.deepEqual(problems, []);
  };
  return { page, finish };
}

test('widget.html: four live examples render under the documented CSP, without errors', async () => {
  const { page, finish } = await open({ width: 1280, height: 900 });
  assert.equal(await page.locator('qk-scope').count(), 4);
  const row = await page.evaluate(() =>
    [...document.getElementById('ex-worked').shadowRoot.querySelector('[data-matrix=weights] [role=row]').children].map((c) => c.textContent));
  assert.deepEqual(row, ['0.5065', '0.1863', '0.3072']);
  assert.match(await page.textContent('#csp + p + pre'), /default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'$/);
  await finish();
});

test('widget.html at 390 px: no sideways scrolling, every widget within the page; axe-core finds nothing', async () => {
  const { page, finish } = await open({ width: 390, height: 844 }, { bypassCSP: true });
  const m = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    view: document.documentElement.clientWidth,
    widgets: [...document.querySelectorAll('qk-scope')].map((w) => ({ id: w.id, right: w.getBoundingClientRect().right, inner: w.scrollWidth - w.clientWidth })),
  }));
  assert.ok(m.scroll <= m.view, `page scrollWidth ${m.scroll} > ${m.view}`);
  for (const w of m.widgets) {
    assert.ok(w.right <= m.view, `${w.id} ends past the viewport (${w.right})`);
    assert.ok(w.inner <= 0, `${w.id} scrolls sideways inside (${w.inner} px)`);
  }
  await page.addScriptTag({ path: axePath });
  const v = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ['violations'] })).violations.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}`)));
  assert.deepEqual(v, []);
  await finish();
});
