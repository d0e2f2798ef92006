// tests/e2e/ch4.test.mjs — chapter 4 (temperature) in the built page: the tau slider changes
// the weights and the live readouts (entropy, max weight, effective support), tiny tau matches
// the hard argmax, large tau approaches uniform, URL round-trip, hostile URL values, the
// language switch, exports, and screenshots at 390 and 1280 px.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ARTIFACTS, PHONE, cells, checkExports, noInjectedMarkup, noProblems, usePage, waitReady } from './chapter-helpers.mjs';

const env = usePage();
const FIG = '[data-testid="figure-c4-temp"]';
const read = (page, id) => page.locator(`${FIG} [data-testid="${id}"]`).getAttribute('data-value').then(Number);

test('tau = 1: row 1 has the softmax weights, entropy and support of the example', async () => {
  const { page, problems, close } = await env.open('#ch4');
  try {
    const fig = page.locator(FIG);
    await fig.scrollIntoViewIfNeeded();
    const w = (await cells(page, 'c4-weights')).filter((c) => c.i === 0).map((c) => c.value);
    const z = [2, 1, 0.5, 0, -0.5, -1];
    const sum = z.reduce((a, x) => a + Math.exp(x), 0);
    z.forEach((x, j) => assert.ok(Math.abs(w[j] - Math.exp(x) / sum) < 1e-5, `w[${j}]`));
    const H = -w.reduce((a, p) => a + p * Math.log(p), 0);
    assert.ok(Math.abs((await read(page, 'c4-read-h')) - H) < 1e-4);
    assert.ok(Math.abs((await read(page, 'c4-read-max')) - w[0]) < 1e-6);
    assert.ok(Math.abs((await read(page, 'c4-read-support')) - Math.exp(H)) < 1e-3);
    assert.match(await page.textContent('[data-testid="section-c4-measure"]'), /1\.\d{3}/);
    await fig.screenshot({ path: join(ARTIFACTS, 'ch4-temp-desktop.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('the slider: small tau sharpens to the hard argmax, large tau flattens; state in the URL survives a reload', async () => {
  const { page, problems, close } = await env.open('#ch4');
  try {
    const fig = page.locator(FIG);
    await fig.scrollIntoViewIfNeeded();
    const h1 = await read(page, 'c4-read-h');
    await fig.locator('[data-testid="c4-tau"]').fill('-2'); // log10: tau = 0.01
    await page.waitForFunction(() => /c4\.tau=0\.01(&|$)/.test(location.search));
    assert.ok((await read(page, 'c4-read-h')) < 1e-3, 'entropy near 0');
    assert.ok((await read(page, 'c4-read-max')) > 0.9999, 'max weight near 1');
    assert.ok((await read(page, 'c4-read-hard')) < 1e-6, 'softmax at tau = 0.01 matches the hard one-hot row');
    const sharp = (await cells(page, 'c4-weights')).filter((c) => c.i === 0).map((c) => c.value);
    assert.ok(sharp[0] > 0.9999 && sharp.slice(1).every((x) => x < 1e-6));

    await fig.locator('[data-testid="c4-tau"]').fill('2'); // tau = 100
    await page.waitForFunction(() => /c4\.tau=100(&|$)/.test(location.search));
    const flat = await read(page, 'c4-read-h');
    assert.ok(flat > h1 && Math.abs(flat - Math.log(6)) < 0.01, `entropy near log 6 (${flat})`);
    assert.ok(Math.abs((await read(page, 'c4-read-support')) - 6) < 0.05);

    await fig.locator('[data-testid="c4-row-2"]').check();
    await page.waitForFunction(() => /c4\.row=2(&|$)/.test(location.search));
    await fig.locator('[data-testid="c4-tau"]').fill('-0.5');
    await page.waitForFunction(() => /c4\.tau=0\.316(&|$)/.test(location.search));
    const rowTwo = await read(page, 'c4-read-h');
    await page.reload();
    await waitReady(page);
    await page.locator(FIG).scrollIntoViewIfNeeded();
    assert.equal(await fig.locator('[data-testid="c4-row-2"]').isChecked(), true);
    assert.equal(Number(await fig.locator('[data-testid="c4-tau"]').inputValue()).toFixed(2), '-0.50');
    assert.equal(await read(page, 'c4-read-h'), rowTwo);

    await fig.locator('[data-testid="reset"]').click();
    assert.doesNotMatch(page.url(), /c4\./);
    assert.equal(await read(page, 'c4-read-h'), h1);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('hostile URL values never become markup and fall back to defaults', async () => {
  const evil = encodeURIComponent('<img src=x onerror=alert(1)>');
  const { page, problems, close } = await env.open(`?c4.tau=${evil}&c4.row=${evil}#ch4`);
  try {
    await page.locator(FIG).scrollIntoViewIfNeeded();
    await noInjectedMarkup(page);
    assert.equal(await page.locator(FIG).locator('[data-testid="c4-tau"]').inputValue(), '0');
    assert.equal(await page.locator(FIG).locator('[data-testid="c4-row-1"]').isChecked(), true);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('language switch: Chinese headings, numbers kept', async () => {
  const { page, problems, close } = await env.open('?c4.tau=0.5#ch4');
  try {
    const h = await read(page, 'c4-read-h');
    await page.click('[data-testid="lang-zh"]');
    await page.waitForFunction(() => /温度系数/.test(document.getElementById('ch4-title')?.textContent ?? ''));
    assert.match(await page.textContent('[data-testid="section-c4-limit"]'), /硬性 argmax/);
    assert.match(await page.textContent(FIG), /有效支撑集/);
    assert.equal(await read(page, 'c4-read-h'), h);
    await page.locator(FIG).screenshot({ path: join(ARTIFACTS, 'ch4-temp-zh.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('exports and phone screenshot: no sideways scroll at 390 px', async () => {
  const { page, problems, close } = await env.open('#ch4', { viewport: PHONE });
  try {
    await page.locator(FIG).scrollIntoViewIfNeeded();
    const files = await checkExports(page, 'figure-c4-temp');
    assert.match(files.csv.bytes.toString('utf8'), /^matrix,query,key,value\r\nweights,1,1,0\.5/);
    const json = JSON.parse(files.json.bytes.toString('utf8'));
    assert.equal(json.data.tau, 1);
    assert.equal(json.data.sweep.tau.length, 41);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `page scrolls sideways by ${overflow}px at 390px`);
    await page.locator(FIG).screenshot({ path: join(ARTIFACTS, 'ch4-temp-phone.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});
