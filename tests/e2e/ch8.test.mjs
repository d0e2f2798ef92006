// tests/e2e/ch8.test.mjs — chapter 8 (beyond quadratic) in the built page: linear attention
// (elu + 1, FAVOR+) against softmax from forward() has a finite, positive error that falls
// with the number of random features; causal via prefix sums; the timing run at small L (no
// timings asserted, the crossover summary is a measured L or none); top-k and window + global
// (+ BigBird random keys) sparsity through forward() (zero error when
// nothing is dropped, fraction of pairs kept); URL round-trip, hostile URL values, the
// language switch, exports, and screenshots at 390 and 1280 px.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ARTIFACTS, PHONE, cells, chapterOverflow, checkExports, noInjectedMarkup, noProblems, usePage, waitReady } from './chapter-helpers.mjs';

const env = usePage();
const LIN = '[data-testid="figure-c8-linear"]';
const TIME = '[data-testid="figure-c8-time"]';
const SPARSE = '[data-testid="figure-c8-sparse"]';

async function linSummary(page) {
  await page.locator(LIN).scrollIntoViewIfNeeded();
  // The error curve comes from the worker: wait for the one of the settings shown.
  await page.waitForFunction(() => {
    const d = document.querySelector('[data-testid="c8-lin-summary"]')?.dataset;
    return d?.elu !== undefined && d.curve !== undefined && d.curveFor === d.key;
  });
  return page.locator('[data-testid="c8-lin-summary"]').evaluate((e) => ({ elu: Number(e.dataset.elu), favor: Number(e.dataset.favor), curve: JSON.parse(e.dataset.curve), text: e.textContent }));
}

async function sparseSummary(page) {
  await page.locator(SPARSE).scrollIntoViewIfNeeded();
  await page.waitForFunction(() => document.querySelector('[data-testid="c8-sparse-summary"]')?.dataset.err !== undefined);
  return page.locator('[data-testid="c8-sparse-summary"]').evaluate((e) => ({ kept: Number(e.dataset.kept), scored: Number(e.dataset.scored), err: Number(e.dataset.err), text: e.textContent }));
}

test('linear attention: error against softmax is finite and > 0, FAVOR+ improves with m; controls change the charts and the URL', async () => {
  const { page, problems, close } = await env.open('#c8-error');
  try {
    const s = await linSummary(page);
    assert.ok(Number.isFinite(s.elu) && s.elu > 0, `elu + 1 error finite and > 0 (${s.elu})`);
    assert.ok(Number.isFinite(s.favor) && s.favor > 0, `FAVOR+ error finite and > 0 (${s.favor})`);
    assert.equal(s.curve.length, 11, 'm = 4 ... 4096');
    assert.ok(s.curve[10] < s.curve[0] / 4, `FAVOR+ error at m = 4096 (${s.curve[10]}) well below m = 4 (${s.curve[0]})`);
    assert.ok(s.curve[10] < s.elu, 'with enough features FAVOR+ beats elu + 1 (a different kernel)');
    const fig = page.locator(LIN);
    // sigma: the maps follow at once, the curve (from the worker) follows for the new sigma.
    await fig.locator('[data-testid="c8-sigma"]').fill('1');
    await page.waitForFunction(() => /c8\.sigma=1(&|$)/.test(location.search));
    const s1 = await linSummary(page);
    assert.match(await page.locator('[data-testid="c8-lin-summary"]').getAttribute('data-curve-for'), /^1,1,false$/);
    assert.equal(s1.curve.length, 11);
    assert.notDeepEqual(s1.curve, s.curve, 'a new sigma, a new curve');
    await fig.locator('[data-testid="c8-sigma"]').fill('0.5');
    assert.deepEqual((await linSummary(page)).curve, s.curve, 'back to sigma 0.5: the same curve');
    const soft = await cells(page, 'c8-softmax');
    for (let i = 0; i < 8; i++) assert.ok(Math.abs(soft.filter((c) => c.i === i).reduce((a, c) => a + c.value, 0) - 1) < 1e-4);
    const approx0 = await cells(page, 'c8-approx');
    await fig.locator('[data-testid="c8-map-elu"]').check();
    await page.waitForFunction(() => /c8\.map=elu/.test(location.search));
    const approx1 = await cells(page, 'c8-approx');
    assert.notDeepEqual(approx1.map((c) => c.value), approx0.map((c) => c.value));
    for (const c of approx1) assert.ok(c.value > 0, 'elu + 1 weights are all positive');
    await fig.locator('[data-testid="c8-causal"]').check();
    await page.waitForFunction(() => /c8\.causal=1/.test(location.search));
    const causal = await linSummary(page);
    assert.ok(Number.isFinite(causal.elu) && causal.elu > 0);
    const ac = await cells(page, 'c8-approx');
    assert.ok(ac.filter((c) => c.j > c.i).every((c) => c.value === 0), 'causal: no weight on future keys');
    await page.reload();
    await waitReady(page);
    assert.equal(await fig.locator('[data-testid="c8-map-elu"]').isChecked(), true);
    assert.equal(await fig.locator('[data-testid="c8-causal"]').isChecked(), true);
    assert.equal((await linSummary(page)).elu, causal.elu);
    await fig.locator('[data-testid="reset"]').click();
    assert.doesNotMatch(page.url(), /c8\./);
    const files = await checkExports(page, 'figure-c8-linear');
    assert.match(files.csv.bytes.toString('utf8'), /^matrix,row,col,value\r\nsoftmax,/);
    await fig.screenshot({ path: join(ARTIFACTS, 'ch8-linear-desktop.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('timing: a quick run fills the chart on its own; Run measures exact and linear attention at L = 64..256', async () => {
  const { page, problems, close } = await env.open('?c8.maxL=256#c8-time');
  try {
    const fig = page.locator(TIME);
    await fig.scrollIntoViewIfNeeded();
    await page.waitForFunction(() => document.querySelector('[data-testid="c8-status"]')?.dataset.done === 'true', null, { timeout: 60000 });
    assert.match(await fig.locator('[data-testid="c8-status"]').textContent(), /Quick run up to L = 256/);
    assert.equal(await page.locator('[data-testid="c8-time"] circle.point').count(), 12, 'not empty before Run');
    await fig.locator('[data-testid="c8-run"]').click();
    await page.waitForFunction(() => document.querySelector('[data-testid="c8-status"]')?.dataset.done === 'true', null, { timeout: 60000 });
    assert.equal(await page.locator('[data-testid="c8-time"] circle.point').count(), 12, '4 series x 3 lengths');
    const summary = fig.locator('[data-testid="c8-time-summary"]');
    assert.match(await summary.textContent(), /^At L = 256: exact softmax \(tiled\).*Linear elu \+ 1 is (faster than the tiled softmax from L = (64|128|256) on|not yet faster than the tiled softmax at L = 256)\.$/);
    const cross = await summary.evaluate((e) => e.dataset.crossover);
    assert.ok(cross === '' || ['64', '128', '256'].includes(cross), `crossover is a measured L or none (${cross})`);
    const files = await checkExports(page, 'figure-c8-time');
    assert.match(files.csv.bytes.toString('utf8'), /^series,L,ms,runs\r\n/);
    // The crossover is the native benchmark's: linear elu + 1 against the tiled softmax
    // (attention(), no L x L intermediates), both from the core; forward() is timed beside them.
    const json = JSON.parse(files.json.bytes.toString('utf8')).data;
    assert.deepEqual([...new Set(json.timings.map((x) => x.series))].sort(), ['core', 'elu', 'favor', 'tiled']);
    const firstFaster = [64, 128, 256].find((L) => [64, 128, 256].filter((x) => x >= L).every((x) => {
      const at = (series) => json.timings.find((r) => r.series === series && r.x === x).ms;
      return at('elu') < at('tiled');
    }));
    assert.equal(json.crossoverL ?? null, firstFaster ?? null, 'crossover measured against the tiled softmax');
    await fig.screenshot({ path: join(ARTIFACTS, 'ch8-time-desktop.png') });
    await fig.locator('[data-testid="c8-dim-128"]').check();
    await page.waitForFunction(() => /c8\.dim=128/.test(location.search));
    // A new width starts a quick run at once, as a new largest L does: the chart is never empty.
    // (After Run the status said the full run was done; now it reports the quick run again.)
    await page.waitForFunction(() => {
      const st = document.querySelector('[data-testid="c8-status"]');
      return st?.dataset.done === 'true' && /Quick run up to L = 256/.test(st.textContent ?? '');
    }, null, { timeout: 60000 });
    assert.match(await summary.textContent(), /^At L = 256: exact softmax/, 'a new width reruns the timings');
    noProblems(problems);
  } finally {
    await close();
  }
});

test('sparse: top-k with k = L and a full window give zero error; the window scores only what it keeps', async () => {
  const { page, problems, close } = await env.open('#c8-sparse');
  try {
    const fig = page.locator(SPARSE);
    const s0 = await sparseSummary(page);
    assert.equal(s0.kept, 4 / 16, 'k = 4 of 16 keys kept per row');
    assert.equal(s0.scored, 1, 'top-k scores every pair');
    assert.ok(s0.err > 0 && Number.isFinite(s0.err));
    assert.equal((await cells(page, 'c8-sparse')).filter((c) => c.value > 0).length, 64);
    await fig.locator('[data-testid="c8-k"]').fill('16');
    await page.waitForFunction(() => /c8\.k=16/.test(location.search));
    assert.ok((await sparseSummary(page)).err < 1e-6, 'k = L is plain softmax');
    assert.equal(await fig.locator('[data-testid="c8-w"]').isDisabled(), true, 'w does nothing under top-k');
    assert.equal(await fig.locator('[data-testid="c8-g"]').isDisabled(), true, 'g does nothing under top-k');
    assert.equal(await fig.locator('[data-testid="c8-r"]').isDisabled(), true, 'r does nothing under top-k');
    await fig.locator('[data-testid="c8-pattern-window"]').check();
    await page.waitForFunction(() => /c8\.pattern=window/.test(location.search));
    assert.equal(await fig.locator('[data-testid="c8-k"]').isDisabled(), true, 'k does nothing under the window');
    assert.equal(await fig.locator('[data-testid="c8-w"]').isDisabled(), false);
    assert.equal(await fig.locator('[data-testid="c8-g"]').isDisabled(), false);
    assert.equal(await fig.locator('[data-testid="c8-r"]').isDisabled(), false);
    const w = await sparseSummary(page);
    // w = 2, g = 1: band |i - j| <= 2 plus row 0 and column 0.
    let n = 0;
    for (let i = 0; i < 16; i++) for (let j = 0; j < 16; j++) if (Math.abs(i - j) <= 2 || i < 1 || j < 1) n++;
    assert.equal(w.kept, n / 256);
    assert.equal(w.scored, w.kept, 'the window scores only the pairs it keeps');
    assert.ok(w.err > 0);
    const masked = await page.locator('[data-testid="c8-sparse"] g.cell[data-masked="true"]').count();
    assert.equal(masked, 256 - n, 'dropped pairs are hatched');
    await fig.locator('[data-testid="c8-r"]').fill('2');
    await page.waitForFunction(() => /c8\.r=2/.test(location.search));
    const br = await sparseSummary(page);
    // BigBird: two more random keys in each row except row 0 (global, it already sees all).
    assert.equal(br.kept, (n + 2 * 15) / 256, 'r = 2 random keys per row');
    await fig.locator('[data-testid="c8-w"]').fill('15');
    await page.waitForFunction(() => /c8\.w=15/.test(location.search));
    assert.ok((await sparseSummary(page)).err < 1e-6, 'a full window is plain softmax');
    await page.reload();
    await waitReady(page);
    assert.equal(await fig.locator('[data-testid="c8-pattern-window"]').isChecked(), true);
    assert.equal(await fig.locator('[data-testid="c8-w"]').inputValue(), '15');
    await fig.locator('[data-testid="c8-w"]').fill('1');
    await sparseSummary(page);
    const files = await checkExports(page, 'figure-c8-sparse');
    assert.match(files.csv.bytes.toString('utf8'), /^matrix,row,col,value\r\nfull,/);
    await fig.screenshot({ path: join(ARTIFACTS, 'ch8-sparse-desktop.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('hostile URL values never become markup and fall back to defaults', async () => {
  const evil = encodeURIComponent('<img src=x onerror=alert(1)>');
  const { page, problems, close } = await env.open(`?c8.map=${evil}&c8.m=${evil}&c8.pattern=${evil}&c8.k=1e99#ch8`);
  try {
    await linSummary(page);
    await sparseSummary(page);
    await noInjectedMarkup(page);
    assert.equal(await page.locator(LIN).locator('[data-testid="c8-map-favor"]').isChecked(), true);
    assert.equal(await page.locator(SPARSE).locator('[data-testid="c8-pattern-topk"]').isChecked(), true);
    assert.equal(await page.locator(SPARSE).locator('[data-testid="c8-k"]').inputValue(), '16', 'k clamped');
    noProblems(problems);
  } finally {
    await close();
  }
});

test('language switch: chapter 8 in Chinese; phone screenshots without sideways scroll', async () => {
  const { page, problems, close } = await env.open('?c8.maxL=256#ch8', { viewport: PHONE });
  try {
    await linSummary(page);
    await sparseSummary(page);
    await page.locator(TIME).locator('[data-testid="c8-run"]').click();
    await page.waitForFunction(() => document.querySelector('[data-testid="c8-status"]')?.dataset.done === 'true', null, { timeout: 60000 });
    const overflow = await chapterOverflow(page, 'ch8');
    assert.ok(overflow <= 1, `chapter 8 sticks out by ${overflow}px at 390px`);
    await page.locator(LIN).screenshot({ path: join(ARTIFACTS, 'ch8-linear-phone.png') });
    await page.locator(TIME).screenshot({ path: join(ARTIFACTS, 'ch8-time-phone.png') });
    await page.locator(SPARSE).screenshot({ path: join(ARTIFACTS, 'ch8-sparse-phone.png') });
    await page.click('[data-testid="lang-zh"]');
    await page.waitForFunction(() => /超越平方复杂度/.test(document.getElementById('ch8-title')?.textContent ?? ''));
    assert.match(await linSummary(page).then((s) => s.text), /相对 softmax 的输出误差/);
    assert.match(await page.textContent('[data-testid="section-c8-sparse"]'), /稀疏注意力/);
    await page.locator(SPARSE).screenshot({ path: join(ARTIFACTS, 'ch8-sparse-zh-phone.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});
