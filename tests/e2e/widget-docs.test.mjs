// tests/e2e/widget-docs.test.mjs — the widget docs page (web/dist/widget.html, built by
// `npm run build:widget && npm run build:web`) through `vite preview`: its live examples render
// with no console errors, and the event log shows the worked example's first row.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { repoRoot, startPreview } from './server.mjs';

let server;
let browser;

before(async () => {
  if (!existsSync(join(repoRoot, 'web/dist/widget.html')))
    throw new Error('web/dist/widget.html is missing: run `npm run build:widget && npm run build:web` first');
  server = await startPreview();
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--disable-gpu', '--no-first-run'] });
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test('widget.html: four live examples render without errors', async () => {
  const page = await browser.newPage();
  const problems = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(server.url + 'widget.html');
  await page.waitForFunction(() =>
    [...document.querySelectorAll('qk-scope')].every((w) => w.shadowRoot?.querySelector('[role=grid]')), null, { timeout: 20000 });
  assert.equal(await page.locator('qk-scope').count(), 4);
  const row = await page.evaluate(() =>
    [...document.getElementById('ex-worked').shadowRoot.querySelector('[data-matrix=weights] [role=row]').children].map((c) => c.textContent));
  assert.deepEqual(row, ['0.5065', '0.1863', '0.3072']);
  assert.deepEqual(problems, []);
  await page.close();
});
