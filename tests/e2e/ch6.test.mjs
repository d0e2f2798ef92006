// tests/e2e/ch6.test.mjs — chapter 6 (normalizers) in the built page: softmax has no zeros,
// sparsemax has exact zeros, top-k with k = 1 has exactly one non-zero weight, the tie rule
// (lowest index) for hard and top-k, Gumbel resampling changes only the Gumbel row (seed in
// the URL), hard Gumbel is one-hot, Gumbel sample frequencies follow softmax(z), URL
// round-trip, hostile values, the language switch, exports, screenshots at 390 and 1280 px.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ARTIFACTS, PHONE, checkExports, noInjectedMarkup, noProblems, proseText, usePage, waitReady } from './chapter-helpers.mjs';

const env = usePage();
const FIG = '[data-testid="figure-c6-norms"]';
const GUM = '[data-testid="figure-c6-gumbel"]';
const stat = (page, name) =>
  page.locator(`${FIG} [data-testid="c6-stat-${name}"]`).evaluate((tr) => ({ h: Number(tr.dataset.h), nonzero: Number(tr.dataset.nonzero), max: Number(tr.dataset.max), w: tr.dataset.weights.split(',').map(Number) }));

test('defaults: softmax has no zero, sparsemax exact zeros, top-2 two keys, hard one key', async () => {
  const { page, problems, close } = await env.open('#ch6');
  try {
    await page.locator(FIG).scrollIntoViewIfNeeded();
    const soft = await stat(page, 'softmax');
    assert.equal(soft.nonzero, 6);
    assert.ok(Math.abs(soft.w[0] - 0.5382) < 1e-3);
    assert.equal((await stat(page, 'hard')).nonzero, 1);
    assert.equal((await stat(page, 'topk_softmax')).nonzero, 2);
    const sp = await stat(page, 'sparsemax');
    assert.ok(sp.w.includes(0), 'sparsemax has exact zeros');
    assert.ok(Math.abs(sp.w.reduce((a, b) => a + b, 0) - 1) < 1e-5);
    await page.locator(FIG).screenshot({ path: join(ARTIFACTS, 'ch6-norms-desktop.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('temperature divides z once; with a tie, low temperature splits the weight evenly (live from the core)', async () => {
  const { page, problems, close } = await env.open('#c6-five');
  try {
    const five = await proseText(page, 'section-c6-five');
    assert.match(five, /The logits are divided by τ once/);
    assert.doesNotMatch(five, /already divided by/);
    const compare = await proseText(page, 'section-c6-compare');
    assert.match(compare, /softmax at τ=0\.05 gives \[0\.5, 0\.5, 0, 0, 0, 0\], while hard attention/);
    await page.click('[data-testid="lang-zh"]');
    await waitReady(page);
    assert.match(await proseText(page, 'section-c6-compare'), /τ=0\.05 时 softmax 给出 \[0\.5, 0\.5, 0, 0, 0, 0\]/);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('k = 1 gives exactly one non-zero weight; ties go to the lowest index; state survives reload', async () => {
  const { page, problems, close } = await env.open('#ch6');
  try {
    const fig = page.locator(FIG);
    await fig.scrollIntoViewIfNeeded();
    await fig.locator('[data-testid="c6-k"]').fill('1');
    await page.waitForFunction(() => /c6\.k=1(&|$)/.test(location.search));
    const top1 = await stat(page, 'topk_softmax');
    assert.equal(top1.nonzero, 1);
    assert.deepEqual(top1.w, [1, 0, 0, 0, 0, 0]);
    await fig.locator('[data-testid="c6-row-3"]').check();
    await page.waitForFunction(() => /c6\.row=3(&|$)/.test(location.search));
    assert.deepEqual((await stat(page, 'hard')).w, [1, 0, 0, 0, 0, 0], 'tie between keys 1 and 2: key 1');
    assert.deepEqual((await stat(page, 'topk_softmax')).w, [1, 0, 0, 0, 0, 0]);
    const sp = await stat(page, 'sparsemax');
    assert.ok(Math.abs(sp.w[0] - sp.w[1]) < 1e-6 && sp.w[0] > 0, 'sparsemax splits the tie');
    await page.reload();
    await waitReady(page);
    await page.locator(FIG).scrollIntoViewIfNeeded();
    assert.equal(await fig.locator('[data-testid="c6-k"]').inputValue(), '1');
    assert.equal(await fig.locator('[data-testid="c6-row-3"]').isChecked(), true);
    assert.equal((await stat(page, 'topk_softmax')).nonzero, 1);
    await fig.locator('[data-testid="reset"]').click();
    assert.doesNotMatch(page.url(), /c6\.(k|row)=/);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('Gumbel: resample changes the seed (URL) and only the Gumbel row; hard is one-hot; small tau sharpens', async () => {
  const { page, problems, close } = await env.open('#ch6');
  try {
    const fig = page.locator(FIG);
    await fig.scrollIntoViewIfNeeded();
    const g1 = await stat(page, 'gumbel_softmax');
    const s1 = await stat(page, 'softmax');
    await fig.locator('[data-testid="c6-resample"]').click();
    await page.waitForFunction(() => /c6\.seed=2(&|$)/.test(location.search));
    assert.equal(await fig.locator('[data-testid="c6-seed"]').inputValue(), '2');
    assert.notDeepEqual((await stat(page, 'gumbel_softmax')).w, g1.w);
    assert.deepEqual((await stat(page, 'softmax')).w, s1.w);
    await fig.locator('[data-testid="c6-hard"]').check();
    await page.waitForFunction(() => /c6\.hard=1(&|$)/.test(location.search));
    const hard = await stat(page, 'gumbel_softmax');
    assert.equal(hard.nonzero, 1);
    assert.equal(hard.max, 1);
    await fig.locator('[data-testid="c6-tau"]').fill('-1.3'); // tau ~ 0.05
    await page.waitForFunction(() => /c6\.tau=0\.05/.test(location.search));
    assert.ok((await stat(page, 'softmax')).max > 0.999);
    assert.equal((await stat(page, 'sparsemax')).nonzero, 1);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('Gumbel-max: hard sample frequencies over 5000 seeds follow softmax(z), at any tau', async () => {
  const { page, problems, close } = await env.open('?c6.samples=5000&c6.tau=0.3#c6-gumbel');
  try {
    await page.locator(GUM).scrollIntoViewIfNeeded();
    await page.waitForFunction(() => document.querySelector('[data-testid="c6-gumbel-gap"]')?.dataset.gap);
    const freq = (await page.locator('[data-testid="c6-gumbel-gap"]').getAttribute('data-freq')).split(',').map(Number);
    const z = [2, 1, 0.5, 0, -0.5, -1];
    const s = z.reduce((a, x) => a + Math.exp(x), 0);
    z.forEach((x, j) => assert.ok(Math.abs(freq[j] - Math.exp(x) / s) < 0.03, `key ${j + 1}: ${freq[j]} vs ${Math.exp(x) / s}`));
    assert.ok(Math.abs(freq.reduce((a, b) => a + b, 0) - 1) < 1e-9);
    await page.locator(GUM).screenshot({ path: join(ARTIFACTS, 'ch6-gumbel-desktop.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('hostile URL values never become markup and fall back to defaults', async () => {
  const evil = encodeURIComponent('<img src=x onerror=alert(1)>');
  const { page, problems, close } = await env.open(`?c6.k=${evil}&c6.row=${evil}&c6.seed=1e99&c6.samples=${evil}#ch6`);
  try {
    await page.locator(FIG).scrollIntoViewIfNeeded();
    await noInjectedMarkup(page);
    assert.equal(await page.locator(FIG).locator('[data-testid="c6-k"]').inputValue(), '2');
    assert.equal(await page.locator(FIG).locator('[data-testid="c6-seed"]').inputValue(), '999999');
    assert.equal(await page.locator(FIG).locator('[data-testid="c6-row-1"]').isChecked(), true);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('language switch: Chinese headings and labels', async () => {
  const { page, problems, close } = await env.open('#ch6');
  try {
    await page.click('[data-testid="lang-zh"]');
    await page.waitForFunction(() => /归一化函数/.test(document.getElementById('ch6-title')?.textContent ?? ''));
    assert.match(await page.textContent('[data-testid="section-c6-five"]'), /下标最小/);
    assert.match(await page.textContent(FIG), /重新采样/);
    await page.locator(FIG).scrollIntoViewIfNeeded();
    await page.locator(FIG).screenshot({ path: join(ARTIFACTS, 'ch6-norms-zh.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('exports; phone width has no sideways scroll; screenshots at 390 px', async () => {
  const { page, problems, close } = await env.open('#ch6', { viewport: PHONE });
  try {
    await page.locator(FIG).scrollIntoViewIfNeeded();
    const files = await checkExports(page, 'figure-c6-norms');
    assert.match(files.csv.bytes.toString('utf8'), /^matrix,query,key,value\r\nsoftmax,1,1,0\.53/);
    await page.locator(GUM).scrollIntoViewIfNeeded();
    await page.waitForFunction(() => document.querySelector('[data-testid="c6-gumbel-gap"]')?.dataset.gap);
    const g = await checkExports(page, 'figure-c6-gumbel');
    assert.match(g.csv.bytes.toString('utf8'), /^key,sample_frequency,softmax_probability\r\n1,/);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `page scrolls sideways by ${overflow}px at 390px`);
    await page.locator(FIG).screenshot({ path: join(ARTIFACTS, 'ch6-norms-phone.png') });
    await page.locator(GUM).screenshot({ path: join(ARTIFACTS, 'ch6-gumbel-phone.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});
