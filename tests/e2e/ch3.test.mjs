// tests/e2e/ch3.test.mjs — chapter 3 (why divide by sqrt(d_k)) in the built page: the live
// Monte Carlo run through forward() reproduces docs/facts.md §3 (Var(q.k) ~ d_k for 64, 256,
// 512, about 1 when scaled, std about 22.6 at 512), the saturation curves (max weight up,
// Jacobian norm down, unscaled), controls and URL round-trip, hostile URL values, the
// language switch, exports, and screenshots at 390 and 1280 px.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ARTIFACTS, PHONE, checkExports, noInjectedMarkup, noProblems, proseText, usePage, waitReady } from './chapter-helpers.mjs';

const env = usePage();
const MC = '[data-testid="figure-c3-variance"]';
const SAT = '[data-testid="figure-c3-saturation"]';

/** Scrolls the Monte Carlo figure into view (it starts then) and waits until the run is done. */
async function mcDone(page) {
  await page.locator(MC).scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector('[data-testid="c3-progress"]')?.dataset.done === 'true', null, { timeout: 30000 });
  return page.$$eval('[data-testid="c3-table"] tbody tr', (trs) =>
    trs.map((tr) => ({ d: Number(tr.dataset.d), raw: Number(tr.dataset.raw), scaled: Number(tr.dataset.scaled), byD: Number(tr.dataset.byd), cells: [...tr.children].map((c) => c.textContent) })),
  );
}

async function satSummary(page) {
  await page.locator(SAT).scrollIntoViewIfNeeded();
  await page.waitForFunction(() => /\d/.test(document.querySelector('[data-testid="c3-sat-summary"]')?.textContent ?? ''));
  return page.textContent('[data-testid="c3-sat-summary"]');
}

test('Monte Carlo: Var(q.k) is about d_k for 16, 64, 256, 512; about 1 scaled; about 1/d_k divided by d_k', async () => {
  const { page, problems, close } = await env.open('#ch3');
  try {
    const rows = await mcDone(page);
    assert.deepEqual(rows.map((r) => r.d), [16, 64, 256, 512]);
    for (const r of rows) {
      assert.ok(Math.abs(r.raw / r.d - 1) < 0.1, `d = ${r.d}: Var(q.k) = ${r.raw} is within 10% of ${r.d}`);
      assert.ok(Math.abs(r.scaled - 1) < 0.1, `d = ${r.d}: Var(q.k / sqrt d) = ${r.scaled} is about 1`);
      assert.ok(Math.abs(r.byD * r.d - 1) < 0.1, `d = ${r.d}: Var(q.k / d) = ${r.byD} is about 1/d`);
      assert.ok(Math.abs(r.scaled - r.raw / r.d) < 1e-3 * r.scaled, 'the core\'s scaled scores are raw / sqrt(d)');
    }
    const std512 = Math.sqrt(rows[3].raw);
    assert.ok(Math.abs(std512 - 22.6) < 1.2, `std at 512 is about 22.6 (got ${std512})`);
    assert.match(await page.textContent('[data-testid="c3-progress"]'), /Done: 10\u2009240 pairs per width/);
    // The chart has the three measured series at the four widths.
    assert.equal(await page.locator('[data-testid="c3-variance"] circle.point').count(), 12);
    // Prose quotes std = 22.6 at 512.
    assert.match(await page.textContent('[data-testid="section-c3-variance"]'), /22\.6/);
    await page.locator(MC).screenshot({ path: join(ARTIFACTS, 'ch3-variance-desktop.png') });

    // The same seed gives the same numbers after a reload (seeded RNG, shareable URL).
    await page.reload();
    await waitReady(page);
    const again = await mcDone(page);
    assert.deepEqual(again.map((r) => r.raw), rows.map((r) => r.raw));
    noProblems(problems);
  } finally {
    await close();
  }
});

test('controls: sample count and seed rerun the Monte Carlo and go to the URL; reset restores them', async () => {
  const { page, problems, close } = await env.open('#ch3', { reducedMotion: 'reduce' });
  try {
    const first = await mcDone(page);
    const fig = page.locator(MC);
    await fig.locator('[data-testid="c3-samples-1000"]').check();
    await page.waitForFunction(() => /c3\.samples=1000(&|$)/.test(location.search));
    const small = await mcDone(page);
    assert.match(await page.textContent('[data-testid="c3-progress"]'), /Done: 1\u2009024 pairs/);
    assert.notDeepEqual(small.map((r) => r.raw), first.map((r) => r.raw));

    await fig.locator('[data-testid="c3-resample"]').click();
    await page.waitForFunction(() => /c3\.seed=2(&|$)/.test(location.search));
    assert.equal(await fig.locator('[data-testid="c3-seed"]').inputValue(), '2');
    const reseeded = await mcDone(page);
    assert.notDeepEqual(reseeded.map((r) => r.raw), small.map((r) => r.raw));

    await page.reload();
    await waitReady(page);
    assert.equal(await fig.locator('[data-testid="c3-samples-1000"]').isChecked(), true);
    assert.deepEqual((await mcDone(page)).map((r) => r.raw), reseeded.map((r) => r.raw));

    await fig.locator('[data-testid="reset"]').click();
    assert.doesNotMatch(page.url(), /c3\./);
    assert.deepEqual((await mcDone(page)).map((r) => r.raw), first.map((r) => r.raw));
    noProblems(problems);
  } finally {
    await close();
  }
});

test('saturation: unscaled max weight climbs toward 1 and the Jacobian norm falls; scaled stays flat; L_k slider in the URL', async () => {
  const { page, problems, close } = await env.open('#c3-saturation');
  try {
    const text = await satSummary(page);
    const nums = text.match(/\d+\.\d+/g).map(Number);
    const [rawMax, rawJac, sqrtMax, sqrtJac, dMax, uniform] = nums;
    assert.ok(rawMax > 0.85, `unscaled max weight at 512 is near 1 (${rawMax})`);
    assert.ok(sqrtMax < 0.5, `scaled max weight stays low (${sqrtMax})`);
    assert.ok(rawJac < sqrtJac / 2, `unscaled Jacobian (${rawJac}) is far below scaled (${sqrtJac})`);
    assert.ok(Math.abs(dMax - uniform) < 0.02, `divided by d: nearly uniform (${dMax} vs ${uniform})`);
    assert.equal(uniform, 0.063, '1/16');
    // Curves: the unscaled max weight increases from d = 4 to d = 512.
    const ys = await page.$$eval('[data-testid="c3-maxweight"] circle.s-0', (cs) => cs.map((c) => Number(c.getAttribute('cy'))));
    assert.equal(ys.length, 8);
    assert.ok(ys[7] < ys[0], 'higher on the chart (smaller y) at d = 512');

    await page.locator(SAT).locator('[data-testid="c3-lk"]').fill('4');
    await page.waitForFunction(() => /c3\.lk=4(&|$)/.test(location.search));
    // The curves come from the worker: wait for the ones of L_k = 4.
    await page.waitForSelector('[data-testid="c3-sat-summary"][data-lk="4"]');
    const t4 = await page.textContent('[data-testid="c3-sat-summary"]');
    assert.notEqual(t4, text);
    assert.match(t4, /\(0\.250\)/, 'uniform limit 1/4');
    assert.match(await page.textContent('[data-testid="c3-maxweight"]'), /uniform \(Lₖ = 4\)/);
    await page.reload();
    await waitReady(page);
    assert.equal(await page.locator(SAT).locator('[data-testid="c3-lk"]').inputValue(), '4');
    await satSummary(page);
    await page.waitForSelector('[data-testid="c3-sat-summary"][data-lk="4"]');
    assert.equal(await page.textContent('[data-testid="c3-sat-summary"]'), t4);
    await page.locator(SAT).screenshot({ path: join(ARTIFACTS, 'ch3-saturation-desktop.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('hostile URL values are ignored or clamped and never become markup', async () => {
  const evil = encodeURIComponent('<img src=x onerror=alert(1)>');
  const { page, problems, close } = await env.open(`?c3.lk=${evil}&c3.samples=${encodeURIComponent('<svg onload=alert(1)>')}&c3.seed=1e99#ch3`, { reducedMotion: 'reduce' });
  try {
    await mcDone(page);
    await satSummary(page);
    await noInjectedMarkup(page);
    assert.equal(await page.locator(MC).locator('[data-testid="c3-seed"]').inputValue(), '999999', 'seed clamped');
    assert.equal(await page.locator(MC).locator('[data-testid="c3-samples-10000"]').isChecked(), true, 'samples default');
    assert.equal(await page.locator(SAT).locator('[data-testid="c3-lk"]').inputValue(), '16', 'L_k default');
    noProblems(problems);
  } finally {
    await close();
  }
});

test('bilinear: the sqrt(d_k) argument applies to it, and its default scale (from the core) is stated', async () => {
  const { page, problems, close } = await env.open('#c3-summary', { reducedMotion: 'reduce' });
  try {
    assert.match(await proseText(page, 'section-c3-summary'), /and to bilinear scores too: .* has variance about d .*default scale for bilinear is 1 \(no division/);
    await page.click('[data-testid="lang-zh"]');
    await waitReady(page);
    assert.match(await proseText(page, 'section-c3-summary'), /也适用于双线性分数.*默认缩放系数为 1（不做除法/);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('language switch: chapter 3 in Chinese, numbers kept', async () => {
  const { page, problems, close } = await env.open('#ch3', { reducedMotion: 'reduce' });
  try {
    const rows = await mcDone(page);
    await page.click('[data-testid="lang-zh"]');
    await page.waitForFunction(() => /为什么要除以/.test(document.getElementById('ch3-title')?.textContent ?? ''));
    const zhRows = await mcDone(page);
    assert.deepEqual(zhRows.map((r) => r.raw), rows.map((r) => r.raw));
    assert.match(await page.textContent('[data-testid="c3-progress"]'), /完成/);
    assert.match(await satSummary(page), /未缩放/);
    assert.match(await page.textContent(SAT), /雅可比/);
    await page.locator(MC).screenshot({ path: join(ARTIFACTS, 'ch3-variance-zh.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('exports: the Monte Carlo table as CSV/JSON, both figures as PNG/SVG', async () => {
  const { page, problems, close } = await env.open('#ch3', { reducedMotion: 'reduce' });
  try {
    await mcDone(page);
    const mc = await checkExports(page, 'figure-c3-variance');
    const csv = mc.csv.bytes.toString('utf8').trim().split('\r\n');
    assert.equal(csv[0], 'd_k,pairs,var_qk,std_qk,var_qk_over_sqrt_d,var_qk_over_d');
    assert.equal(csv.length, 5);
    assert.match(csv[4], /^512,10240,/);
    const json = JSON.parse(mc.json.bytes.toString('utf8'));
    assert.equal(json.data.rows.length, 4);
    assert.equal(json.data.seed, 1);
    await satSummary(page);
    const sat = await checkExports(page, 'figure-c3-saturation');
    assert.match(sat.csv.bytes.toString('utf8'), /^scaling,d_k,mean_max_weight,mean_jacobian_norm\r\nnone,4,/);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('phone width: no sideways scroll; screenshots at 390 px', async () => {
  const { page, problems, close } = await env.open('#ch3', { viewport: PHONE, reducedMotion: 'reduce' });
  try {
    await mcDone(page);
    await satSummary(page);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `page scrolls sideways by ${overflow}px at 390px`);
    await page.locator(MC).screenshot({ path: join(ARTIFACTS, 'ch3-variance-phone.png') });
    await page.locator(SAT).screenshot({ path: join(ARTIFACTS, 'ch3-saturation-phone.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});
