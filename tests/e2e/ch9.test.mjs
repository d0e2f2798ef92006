// tests/e2e/ch9.test.mjs — chapter 9 (diagnostics and choosing) in the built page: per-head,
// per-row entropy from multiHeadForward is finite and within [0, log L_k]; the input scale
// collapses rows (over-focused verdict) and tau > 1 spreads them again; cosine is diffuse;
// the selection guide table; URL round-trip, hostile URL values, the language switch,
// exports, and screenshots at 390 and 1280 px.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ARTIFACTS, PHONE, cells, chapterOverflow, checkExports, noInjectedMarkup, noProblems, usePage, waitReady } from './chapter-helpers.mjs';

const env = usePage();

const FIG = '[data-testid="figure-c9-heads"]';

function heads(page) {
  return page.$$eval(`${FIG} [data-testid="c9-table"] tbody tr`, (trs) => trs.map((tr) => ({ H: Number(tr.dataset.entropy), max: Number(tr.dataset.max), verdict: tr.dataset.verdict })));
}

test('entropy per head and row is finite and within [0, log L_k]; max weight in [1/L, 1]', async () => {
  const { page, problems, close } = await env.open('#ch9');
  try {
    const fig = page.locator(FIG);
    await fig.scrollIntoViewIfNeeded();
    const ent = await cells(page, 'c9-entropy');
    assert.equal(ent.length, 4 * 8, '4 heads x 8 queries');
    for (const c of ent) assert.ok(Number.isFinite(c.value) && c.value >= 0 && c.value <= 1 + 1e-6, `H / log L in [0, 1]: ${c.value}`);
    const maxW = await cells(page, 'c9-maxweight');
    for (const c of maxW) assert.ok(c.value >= 1 / 8 - 1e-6 && c.value <= 1 + 1e-6, `max weight in [1/8, 1]: ${c.value}`);
    const sup = await cells(page, 'c9-support');
    for (const c of sup) assert.ok(c.value >= 1 / 8 - 1e-6 && c.value <= 1 + 1e-6);
    const hs = await heads(page);
    assert.equal(hs.length, 4);
    for (const hd of hs) assert.ok(Number.isFinite(hd.H) && hd.H >= 0 && hd.H <= Math.log(8) + 1e-6, `mean H in [0, log 8]: ${hd.H}`);
    assert.match(await fig.locator('[data-testid="c9-logl"]').textContent(), /2\.079/);
    // Rows of the shown head's weights sum to 1.
    const w = await cells(page, 'c9-weights');
    for (let i = 0; i < 8; i++) {
      const s = w.filter((c) => c.i === i).reduce((a, c) => a + c.value, 0);
      assert.ok(Math.abs(s - 1) < 1e-4);
    }
    // The export JSON carries the raw entropies, all in [0, log L].
    const files = await checkExports(page, 'figure-c9-heads');
    assert.match(files.csv.bytes.toString('utf8'), /^head,query,entropy_nats,entropy_over_log_L,max_weight,effective_support\r\n/);
    const json = JSON.parse(files.json.bytes.toString('utf8'));
    for (const hd of json.data.heads) for (const H of hd.entropy) assert.ok(H >= 0 && H <= Math.log(8) + 1e-6);
    await fig.screenshot({ path: join(ARTIFACTS, 'ch9-heads-desktop.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('large inputs over-focus every head, tau > 1 spreads them; cosine is diffuse; controls in the URL survive a reload', async () => {
  const { page, problems, close } = await env.open('#ch9');
  try {
    const fig = page.locator(FIG);
    await fig.scrollIntoViewIfNeeded();
    const base = await heads(page);
    await fig.locator('[data-testid="c9-sigma"]').fill('0.6'); // log10: sigma = 3.98
    await page.waitForFunction(() => /c9\.sigma=3\.98/.test(location.search));
    const sharp = await heads(page);
    for (let k = 0; k < 4; k++) assert.ok(sharp[k].H < base[k].H, `head ${k + 1}: entropy falls with sigma`);
    assert.ok(sharp.some((hd) => hd.verdict === 'focused'), 'at least one head is flagged over-focused');
    await fig.locator('[data-testid="c9-tau"]').fill('0.7'); // tau = 5.01
    await page.waitForFunction(() => /c9\.tau=5\.01/.test(location.search));
    const warm = await heads(page);
    for (let k = 0; k < 4; k++) assert.ok(warm[k].H > sharp[k].H, `head ${k + 1}: tau > 1 raises the entropy`);

    await fig.locator('[data-testid="c9-score"]').selectOption('cosine');
    await fig.locator('[data-testid="c9-tau"]').fill('0');
    await fig.locator('[data-testid="c9-sigma"]').fill('0');
    await page.waitForFunction(() => /c9\.score=cosine/.test(location.search) && !/c9\.tau/.test(location.search) && !/c9\.sigma/.test(location.search));
    const cos = await heads(page);
    assert.ok(cos.every((hd) => hd.verdict === 'diffuse'), `cosine: every head diffuse (${cos.map((x) => x.verdict)})`);
    // The prose: cosine logits lie in [-1, 1], so at tau = 1 two weights of a row differ by at
    // most e^2, and the largest weight of 8 keys is at most e^2 / (e^2 + 7) (docs/facts.md §9).
    const cw = await cells(page, 'c9-weights');
    for (let i = 0; i < 8; i++) {
      const row = cw.filter((c) => c.i === i).map((c) => c.value);
      assert.ok(Math.max(...row) / Math.min(...row) <= Math.exp(2) * (1 + 1e-3), `row ${i + 1}: ratio ${Math.max(...row) / Math.min(...row)} <= e^2`);
    }
    for (const c of await cells(page, 'c9-maxweight')) assert.ok(c.value <= Math.exp(2) / (Math.exp(2) + 7) + 1e-4, `cosine max weight ${c.value}`);

    await fig.locator('[data-testid="c9-heads-count"]').fill('2');
    await fig.locator('[data-testid="c9-l"]').fill('5');
    await page.waitForFunction(() => /c9\.heads=2/.test(location.search) && /c9\.L=5/.test(location.search));
    assert.equal((await cells(page, 'c9-entropy')).length, 10);
    const before = await cells(page, 'c9-entropy');
    await page.reload();
    await waitReady(page);
    assert.equal(await fig.locator('[data-testid="c9-score"]').inputValue(), 'cosine');
    assert.equal(await fig.locator('[data-testid="c9-heads-count"]').inputValue(), '2');
    assert.deepEqual(await cells(page, 'c9-entropy'), before);
    await fig.locator('[data-testid="reset"]').click();
    assert.doesNotMatch(page.url(), /c9\./);
    assert.equal((await cells(page, 'c9-entropy')).length, 32);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('hostile URL values never become markup and fall back to defaults', async () => {
  const evil = encodeURIComponent('<img src=x onerror=alert(1)>');
  const { page, problems, close } = await env.open(`?c9.score=${evil}&c9.sigma=${evil}&c9.heads=1e99&c9.head=${evil}#ch9`);
  try {
    await noInjectedMarkup(page);
    const fig = page.locator(FIG);
    assert.equal(await fig.locator('[data-testid="c9-score"]').inputValue(), 'scaled_dot');
    assert.equal(await fig.locator('[data-testid="c9-heads-count"]').inputValue(), '8', 'heads clamped to 8');
    assert.equal((await cells(page, 'c9-entropy')).length, 64);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('the selection guide; language switch; phone screenshots without sideways scroll', async () => {
  const { page, problems, close } = await env.open('#ch9', { viewport: PHONE });
  try {
    const guide = page.locator('[data-testid="c9-guide"]');
    assert.equal(await guide.locator('tbody tr').count(), 4);
    const text = await guide.textContent();
    for (const s of ['Scaled dot product', 'Bilinear', 'Cosine similarity', 'adjacency as a mask']) assert.ok(text.includes(s), s);
    assert.match(await page.textContent('[data-testid="section-c9-choose"]'), /scaled-dot baseline/);
    assert.match(await page.textContent('[data-testid="section-c9-reading"]'), /relative match strengths, not confidences/);
    const overflow = await chapterOverflow(page, 'ch9');
    assert.ok(overflow <= 1, `chapter 9 sticks out by ${overflow}px at 390px`);
    await page.locator(FIG).screenshot({ path: join(ARTIFACTS, 'ch9-heads-phone.png') });
    await page.locator('[data-testid="section-c9-choose"]').screenshot({ path: join(ARTIFACTS, 'ch9-guide-phone.png') });
    await page.click('[data-testid="lang-zh"]');
    await page.waitForFunction(() => /诊断/.test(document.getElementById('ch9-title')?.textContent ?? ''));
    assert.match(await page.locator('[data-testid="c9-guide"]').textContent(), /缩放点积注意力/);
    assert.match(await page.locator(FIG).textContent(), /有效支撑/);
    await page.locator(FIG).screenshot({ path: join(ARTIFACTS, 'ch9-heads-zh-phone.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});
