// tests/e2e/ch7.test.mjs — chapter 7 (what attention costs) in the built page: the Run buttons
// measure forward() (in the page's Web Worker, web/src/worker/) and the broadcast additive
// attention at small L (never asserting timings); figure 7.2's naive, tiled and broadcast
// paths (bytes handed back: L^2 for naive, L d for tiled, caps respected),
// the broadcast and fused additive scores agree, linear concat's weights do not change when
// the queries do (docs/facts.md §2) while scaled dot's do, URL round-trip, hostile URL
// values, the language switch, exports, and screenshots at 390 and 1280 px.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ARTIFACTS, PHONE, cells, chapterOverflow, checkExports, noInjectedMarkup, noProblems, usePage, waitReady } from './chapter-helpers.mjs';
import { loadCore } from './server.mjs';

const env = usePage();

const TIME = '[data-testid="figure-c7-time"]';
const ADD = '[data-testid="figure-c7-additive"]';
const LIN = '[data-testid="figure-c7-linear"]';
const PATHS = '[data-testid="figure-c7-paths"]';
const SMALL = '?c7.maxL=128&c7.d=16&c7.addL=64&c7.dh=16';

async function runTime(page) {
  const fig = page.locator(TIME);
  await fig.scrollIntoViewIfNeeded();
  await fig.locator('[data-testid="c7-run"]').click();
  await page.waitForFunction(() => document.querySelector('[data-testid="c7-status"]')?.dataset.done === 'true', null, { timeout: 60000 });
}

async function runAdditive(page) {
  const fig = page.locator(ADD);
  await fig.scrollIntoViewIfNeeded();
  await fig.locator('[data-testid="c7-add-run"]').click();
  await page.waitForFunction(() => document.querySelector('[data-testid="c7-add-status"]')?.dataset.done === 'true', null, { timeout: 60000 });
}

test('a quick run up to L = 128 fills the chart on its own; Run measures every scoring function at L = 32..128; memory chart from shapes', async () => {
  const { page, problems, close } = await env.open(`${SMALL}#ch7`);
  try {
    const fig = page.locator(TIME);
    await fig.scrollIntoViewIfNeeded();
    await page.waitForFunction(() => document.querySelector('[data-testid="c7-status"]')?.dataset.done === 'true', null, { timeout: 60000 });
    assert.match(await fig.locator('[data-testid="c7-status"]').textContent(), /Quick run up to L = 128/);
    assert.equal(await page.locator('[data-testid="c7-time"] circle.point').count(), (await loadCore()).scoreFunctions.length * 3, 'not empty before Run');
    assert.ok((await page.locator('[data-testid="c7-memory"] path.line, [data-testid="c7-memory"] path').count()) > 0, 'memory chart drawn');
    assert.match(await fig.textContent(), /At L = 4096 one head stores 128 MB for S and P/);
    await runTime(page);
    // Every scoring function of the registry x 3 lengths (32, 64, 128).
    assert.equal(await page.locator('[data-testid="c7-time"] circle.point').count(), (await loadCore()).scoreFunctions.length * 3);
    const ratio = Number(await fig.locator('[data-testid="c7-summary"]').getAttribute('data-ratio'));
    assert.ok(Number.isFinite(ratio) && ratio > 0, `additive / scaled dot ratio is a positive number (${ratio})`);
    assert.match(await fig.locator('[data-testid="c7-summary"]').textContent(), /^At L = 128: scaled dot/);
    const files = await checkExports(page, 'figure-c7-time');
    const timings = JSON.parse(files.json.bytes.toString('utf8')).data.timings;
    assert.ok(timings.length > 0 && timings.every((x) => x.thread === 'worker'), 'timed in the Web Worker, not on the page');
    const csv = files.csv.bytes.toString('utf8');
    assert.match(csv, /^kind,series,L,value,unit\r\n/);
    assert.match(csv, /time,additive,128,/);
    assert.match(csv, /memory_estimate,scoresWeights,4096,134217728,bytes/);
    await fig.screenshot({ path: join(ARTIFACTS, 'ch7-time-desktop.png') });
    // New settings: a quick run replaces the old timings at once; the chart is never empty.
    await fig.locator('[data-testid="c7-d-32"]').check();
    await page.waitForFunction(() => document.querySelector('[data-testid="c7-status"]')?.dataset.done === 'true', null, { timeout: 60000 });
    assert.match(await fig.locator('[data-testid="c7-status"]').textContent(), /Quick run up to L = 128/);
    assert.equal(await page.locator('[data-testid="c7-time"] circle.point').count(), (await loadCore()).scoreFunctions.length * 3);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('figure 7.2: naive vs tiled vs broadcast in the worker; tiled hands back O(L d) bytes, naive O(L^2); caps', async () => {
  const { page, problems, close } = await env.open('?c7.pathL=512#c7-paths');
  try {
    const fig = page.locator(PATHS);
    await fig.scrollIntoViewIfNeeded();
    const done = () => page.waitForFunction(() => document.querySelector('[data-testid="c7-paths-status"]')?.dataset.done === 'true', null, { timeout: 120000 });
    await done(); // the quick run up to L = 256 on its own
    assert.match(await fig.locator('[data-testid="c7-paths-status"]').textContent(), /Quick run up to L = 256/);
    await fig.locator('[data-testid="c7-paths-run"]').click();
    await done();
    const files = await checkExports(page, 'figure-c7-paths');
    const data = JSON.parse(files.json.bytes.toString('utf8')).data;
    assert.deepEqual(data.caps, { naive: 2048, tiled: 4096, broadcast: 1024 });
    const at = (series, L) => data.timings.find((x) => x.series === series && x.x === L);
    for (const series of ['naive_dot', 'tiled_dot', 'naive_add', 'tiled_add', 'broadcast_add'])
      for (const L of [64, 128, 256, 512]) {
        const r = at(series, L);
        assert.ok(r, `${series} at L = ${L} measured`);
        assert.ok(Number.isFinite(r.ms) && r.ms >= 0);
        // Every path, the JavaScript broadcast one too, is timed in the worker (the page never blocks).
        assert.equal(r.thread, 'worker', `${series} timed in the worker`);
      }
    const d = data.d;
    for (const L of [64, 128, 256, 512]) {
      // Tiled: output (L, d) and logsumexp (L) as float32 (additive also returns its parameters, O(d d_h)).
      assert.equal(at('tiled_dot', L).bytes, 4 * (L * d + L), `tiled bytes at L = ${L}`);
      assert.ok(at('naive_dot', L).bytes >= 4 * 4 * L * L, `naive returns four (L, L) matrices at L = ${L}`);
      assert.equal(at('broadcast_add', L).bytes, 2 * L * L * data.dh * 4, `broadcast's two (L, L, d_h) tensors at L = ${L}`);
    }
    const growth = (series) => at(series, 512).bytes / at(series, 256).bytes;
    assert.ok(growth('naive_dot') > 3.8, `naive memory ~ L^2 (${growth('naive_dot')})`);
    assert.ok(growth('tiled_dot') < 2.01 && growth('tiled_add') < 2.01, 'tiled memory ~ L');
    assert.match(await fig.locator('[data-testid="c7-paths-summary"]').textContent(), /^At L = 512, scaled dot: naive .* ms and 4\.\d MB handed back; tiled .* ms and 130 KB\.$/);
    assert.match(await fig.locator('[data-testid="c7-paths-memnote"]').textContent(), /O\(L d\), no L × L matrix/);
    assert.match(await fig.textContent(), /Naive stops at L = 2048, broadcast at L = 1024/);
    assert.match(files.csv.bytes.toString('utf8'), /^series,L,ms,bytes,runs,thread\r\n/);
    await fig.screenshot({ path: join(ARTIFACTS, 'ch7-paths-desktop.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('broadcast additive (JS) gives the core\'s scores; ratios against scaled dot are shown', async () => {
  const { page, problems, close } = await env.open(`${SMALL}#ch7`);
  try {
    await runAdditive(page);
    const diff = Number(await page.locator('[data-testid="c7-same"]').getAttribute('data-diff'));
    assert.ok(diff < 1e-4, `broadcast and fused scores agree (max |diff| = ${diff})`);
    assert.match(await page.locator('[data-testid="c7-same"]').textContent(), /at L = 64/);
    // 3 series x lengths 16, 32, 64.
    assert.equal(await page.locator('[data-testid="c7-add-time"] circle.point').count(), 9);
    assert.match(await page.locator('[data-testid="c7-add-summary"]').textContent(), /Claimed: 3–5×/);
    const files = await checkExports(page, 'figure-c7-additive');
    assert.match(files.csv.bytes.toString('utf8'), /^series,L,ms,runs\r\n/);
    const timings = JSON.parse(files.json.bytes.toString('utf8')).data.timings;
    assert.equal(timings.length, 9);
    assert.ok(timings.every((x) => x.thread === 'worker'), 'broadcast, row-by-row and scaled dot all timed in the worker');
    await page.locator(ADD).screenshot({ path: join(ARTIFACTS, 'ch7-additive-desktop.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('linear concat: new queries leave its weights unchanged while scaled dot changes; URL round-trip; reset', async () => {
  const { page, problems, close } = await env.open('#c7-linear');
  try {
    const fig = page.locator(LIN);
    await fig.scrollIntoViewIfNeeded();
    const q0 = await cells(page, 'c7-queries');
    const lc0 = await cells(page, 'c7-lc-weights');
    const sd0 = await cells(page, 'c7-sd-weights');
    assert.equal(lc0.length, 24);
    // Every row of the linear-concat weights is the same.
    for (const c of lc0) assert.equal(c.text, lc0[c.j].text, `row ${c.i} equals row 0 at key ${c.j}`);
    await fig.locator('[data-testid="c7-new-queries"]').click();
    await page.waitForFunction(() => /c7\.qset=1(&|$)/.test(location.search));
    const q1 = await cells(page, 'c7-queries');
    const lc1 = await cells(page, 'c7-lc-weights');
    const sd1 = await cells(page, 'c7-sd-weights');
    assert.notDeepEqual(q1.map((c) => c.text), q0.map((c) => c.text), 'queries changed');
    assert.deepEqual(lc1.map((c) => c.text), lc0.map((c) => c.text), 'linear-concat weights identical');
    for (let k = 0; k < lc0.length; k++) assert.ok(Math.abs(lc1[k].value - lc0[k].value) < 1e-6);
    assert.notDeepEqual(sd1.map((c) => c.text), sd0.map((c) => c.text), 'scaled-dot weights changed');
    const note = fig.locator('[data-testid="c7-lc-change"]');
    assert.ok(Number(await note.getAttribute('data-lc')) < 1e-6);
    assert.ok(Number(await note.getAttribute('data-sd')) > 0.01);

    await fig.locator('[data-testid="c7-qset"]').fill('5');
    await page.waitForFunction(() => /c7\.qset=5(&|$)/.test(location.search));
    const lc5 = await cells(page, 'c7-lc-weights');
    assert.deepEqual(lc5.map((c) => c.text), lc0.map((c) => c.text));
    await page.reload();
    await waitReady(page);
    assert.equal(await fig.locator('[data-testid="c7-qset"]').inputValue(), '5');
    assert.notDeepEqual((await cells(page, 'c7-queries')).map((c) => c.text), q0.map((c) => c.text));
    await fig.locator('[data-testid="reset"]').click();
    assert.doesNotMatch(page.url(), /c7\./);
    assert.deepEqual((await cells(page, 'c7-queries')).map((c) => c.text), q0.map((c) => c.text));
    assert.match(await note.textContent(), /This is query set 0, the reference/, 'no "is 0; ... 0." sentence on set 0');
    const files = await checkExports(page, 'figure-c7-linear');
    assert.match(files.csv.bytes.toString('utf8'), /^matrix,row,col,value\r\nqueries,/);
    await fig.screenshot({ path: join(ARTIFACTS, 'ch7-linear-desktop.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('controls go to the URL and survive a reload; hostile values never become markup', async () => {
  const evil = encodeURIComponent('<img src=x onerror=alert(1)>');
  const { page, problems, close } = await env.open(`?c7.maxL=${evil}&c7.qset=${evil}&c7.d=1e99#ch7`);
  try {
    await noInjectedMarkup(page);
    const fig = page.locator(TIME);
    assert.equal(await fig.locator('[data-testid="c7-maxl-512"]').isChecked(), true, 'maxL default');
    assert.equal(await fig.locator('[data-testid="c7-d-64"]').isChecked(), true, 'd default');
    assert.equal(await page.locator(LIN).locator('[data-testid="c7-qset"]').inputValue(), '0');
    await fig.locator('[data-testid="c7-maxl-256"]').check();
    await fig.locator('[data-testid="c7-d-32"]').check();
    await page.waitForFunction(() => /c7\.maxL=256/.test(location.search) && /c7\.d=32/.test(location.search));
    await page.reload();
    await waitReady(page);
    assert.equal(await fig.locator('[data-testid="c7-maxl-256"]').isChecked(), true);
    assert.equal(await fig.locator('[data-testid="c7-d-32"]').isChecked(), true);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('language switch: chapter 7 in Chinese; phone width screenshots, no sideways scroll', async () => {
  const { page, problems, close } = await env.open(`${SMALL}#ch7`, { viewport: PHONE });
  try {
    await runTime(page);
    await runAdditive(page);
    const overflow = await chapterOverflow(page, 'ch7');
    assert.ok(overflow <= 1, `chapter 7 sticks out by ${overflow}px at 390px`);
    await page.locator(TIME).screenshot({ path: join(ARTIFACTS, 'ch7-time-phone.png') });
    await page.locator(ADD).screenshot({ path: join(ARTIFACTS, 'ch7-additive-phone.png') });
    await page.locator(LIN).screenshot({ path: join(ARTIFACTS, 'ch7-linear-phone.png') });
    await page.click('[data-testid="lang-zh"]');
    await page.waitForFunction(() => /注意力的代价/.test(document.getElementById('ch7-title')?.textContent ?? ''));
    assert.match(await page.textContent('[data-testid="section-c7-linear"]'), /忽略查询/);
    assert.match(await page.locator(TIME).locator('[data-testid="c7-run"]').textContent(), /运行/);
    assert.match(await page.textContent('[data-testid="section-c7-paths"]'), /朴素、分块与广播注意力/);
    await page.locator(LIN).screenshot({ path: join(ARTIFACTS, 'ch7-linear-zh-phone.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});
