// tests/e2e/ch5.test.mjs — chapter 5 (masks and biases) in the built page: top-left vs
// bottom-right causal alignment (L_q = 2, L_k = 4), padding, sliding window, ALiBi slopes
// (powers of two and the interleaved construction), graph adjacency with an empty row,
// soft-capping, fill values in float16 / bfloat16 / float32 (stored constants, NaN, PyTorch),
// URL round-trip, hostile values, the language switch, exports, screenshots.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ARTIFACTS, PHONE, cells, checkExports, noInjectedMarkup, noProblems, proseText, usePage, waitReady } from './chapter-helpers.mjs';

const env = usePage();
const MASK = '[data-testid="figure-c5-mask"]';
const ALIBI = '[data-testid="figure-c5-alibi"]';
const GRAPH = '[data-testid="figure-c5-graph"]';
const CAP = '[data-testid="figure-c5-softcap"]';
const PREC = '[data-testid="figure-c5-precision"]';
const counts = (page, id) => page.locator(`[data-testid="${id}"]`).getAttribute('data-counts');

test('causal alignment: with L_q = 2, L_k = 4 the last query sees all keys bottom-right, 2 top-left; URL survives reload', async () => {
  const { page, problems, close } = await env.open('?c5.lq=2&c5.lk=4#ch5');
  try {
    await page.locator(MASK).scrollIntoViewIfNeeded();
    assert.equal(await counts(page, 'c5-visible-tl'), '1,2');
    assert.equal(await counts(page, 'c5-visible-br'), '3,4');
    const br = await cells(page, 'c5-mask-br');
    assert.ok(br.filter((c) => c.i === 1).every((c) => c.value > 0), 'last query: every key has weight');
    const tl = await cells(page, 'c5-mask-tl');
    assert.deepEqual(tl.filter((c) => c.i === 1).map((c) => c.value > 0), [true, true, false, false]);
    for (const r of [0, 1]) assert.ok(Math.abs(br.filter((c) => c.i === r).reduce((a, c) => a + c.value, 0) - 1) < 1e-5);

    // Padding one key and a window of width 1 to the left: the counts change.
    const fig = page.locator(MASK);
    await fig.locator('[data-testid="c5-pad"]').fill('1');
    await page.waitForFunction(() => /c5\.pad=1(&|$)/.test(location.search));
    assert.equal(await counts(page, 'c5-visible-br'), '3,3');
    await fig.locator('[data-testid="c5-win"]').check();
    await fig.locator('[data-testid="c5-left"]').fill('1');
    await page.waitForFunction(() => /c5\.left=1(&|$)/.test(location.search));
    assert.equal(await counts(page, 'c5-visible-br'), '2,1');
    assert.equal(await counts(page, 'c5-visible-tl'), '1,2');

    await page.reload();
    await waitReady(page);
    await page.locator(MASK).scrollIntoViewIfNeeded();
    assert.equal(await fig.locator('[data-testid="c5-win"]').isChecked(), true);
    assert.equal(await counts(page, 'c5-visible-br'), '2,1');
    await fig.locator('[data-testid="reset"]').click();
    assert.doesNotMatch(page.url(), /c5\.(lq|lk|pad|win|left)=/);
    assert.equal(await counts(page, 'c5-visible-tl'), '1,2,3');
    assert.equal(await counts(page, 'c5-visible-br'), '3,4,5');
    await page.locator(MASK).screenshot({ path: join(ARTIFACTS, 'ch5-mask-desktop.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

const prose = proseText;

test('L_q > L_k: bottom-right alignment leaves the first L_q - L_k rows empty without padding; top-left does not (prose and figure)', async () => {
  const { page, problems, close } = await env.open('?c5.lq=5&c5.lk=3#ch5');
  try {
    assert.match(await prose(page, 'section-c5-structure'), /Lq=5 and Lk=3, the rows with no visible key are 1, 2 under bottom-right alignment and none under top-left\./);
    assert.equal(await counts(page, 'c5-visible-br'), '0,0,1,2,3');
    assert.equal(await counts(page, 'c5-visible-tl'), '1,2,3,3,3');
    const br = await cells(page, 'c5-mask-br');
    assert.deepEqual(br.filter((c) => c.i < 2).map((c) => c.value), [0, 0, 0, 0, 0, 0], 'empty rows: zeros, not NaN');
    assert.match(await page.textContent('[data-testid="c5-visible-br"]'), /no visible key: 1, 2 /);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('additive mask finfo(float16).min: scores below -16 overflow to -inf and a fully masked row is NaN; mild scores give a uniform row', async () => {
  const { page, problems, close } = await env.open('#c5-empty');
  try {
    const text = await prose(page, 'section-c5-empty');
    assert.match(text, /the masked row \[−20, −18, −25, −17\] plus −65504 is stored as \[−∞, −∞, −∞, −∞\] and its softmax is \[NaN, NaN, NaN, NaN\]\./);
    assert.match(text, /the row is uniform: \[0\.25, 0\.25, 0\.25, 0\.25\]\./);
    await page.click('[data-testid="lang-zh"]');
    await waitReady(page);
    const zh = await prose(page, 'section-c5-empty');
    assert.match(zh, /存为 \[−∞, −∞, −∞, −∞\]，其 softmax 为 \[NaN, NaN, NaN, NaN\]/);
    assert.match(await prose(page, 'section-c5-structure'), /没有可见键的行——右下对齐：1, 2；左上对齐：无。/);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('ALiBi: slopes 2^(-8h/H) for H = 8, interleaved for H = 12; the bias is -m|j - i|', async () => {
  const { page, problems, close } = await env.open('#c5-alibi');
  try {
    const fig = page.locator(ALIBI);
    await fig.scrollIntoViewIfNeeded();
    const slopes = () => fig.locator('[data-testid="c5-slopes"] button').evaluateAll((bs) => bs.map((b) => Number(b.dataset.slope)));
    const s8 = await slopes();
    assert.deepEqual(s8, [1, 2, 3, 4, 5, 6, 7, 8].map((h) => 2 ** (-h)));
    const bias = await cells(page, 'c5-alibi-bias');
    const b = (i, j) => bias.find((c) => c.i === i && c.j === j).value;
    assert.ok(Math.abs(b(5, 0) + 0.5 * 5) < 1e-5, 'head 1, distance 5: -2.5');
    assert.ok(Math.abs(b(3, 3)) < 1e-6);
    await fig.locator('[data-testid="c5-heads"]').fill('12');
    await page.waitForFunction(() => /c5\.heads=12(&|$)/.test(location.search));
    const s12 = await slopes();
    const expect = [...[1, 2, 3, 4, 5, 6, 7, 8].map((h) => 2 ** (-h)), ...[1, 3, 5, 7].map((h) => 2 ** (-h / 2))];
    s12.forEach((s, k) => assert.ok(Math.abs(s - expect[k]) < 1e-12, `slope ${k + 1}`));
    await fig.locator('[data-testid="c5-slope-9"]').click();
    await page.waitForFunction(() => /c5\.head=9(&|$)/.test(location.search));
    const bias9 = await cells(page, 'c5-alibi-bias');
    assert.ok(Math.abs(bias9.find((c) => c.i === 0 && c.j === 2).value + 2 * 2 ** -0.5) < 1e-5);
    // Shrinking H below the chosen head clamps it.
    await fig.locator('[data-testid="c5-heads"]').fill('4');
    await page.waitForFunction(() => /c5\.head=4(&|$)/.test(location.search));
    assert.equal(await fig.locator('[data-testid="c5-slope-4"]').getAttribute('aria-pressed'), 'true');
    // Powers of two: consecutive slopes differ by 2^(-8/H), which halves only for H = 8
    // (the caption of Figure 5.2; docs/facts.md §5).
    for (const H of [16, 4]) {
      await fig.locator('[data-testid="c5-heads"]').fill(String(H));
      await page.waitForFunction((H) => new RegExp(`c5\\.heads=${H}(&|$)`).test(location.search), H);
      const s = await slopes();
      assert.equal(s.length, H);
      for (let k = 1; k < H; k++) assert.ok(Math.abs(s[k] / s[k - 1] - 2 ** (-8 / H)) < 1e-6, `H = ${H}: slope ${k + 1} / slope ${k}`);
    }
    await fig.screenshot({ path: join(ARTIFACTS, 'ch5-alibi-desktop.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

/** T5's bucket rule (Raffel et al. 2020; the released _relative_position_bucket), in doubles. */
function t5Bucket(r, bidirectional, numBuckets, maxDistance) {
  let base = 0;
  let n = numBuckets;
  let d;
  if (bidirectional) {
    n = Math.floor(numBuckets / 2);
    base = r > 0 ? n : 0;
    d = Math.abs(r);
  } else d = Math.max(-r, 0);
  const exact = Math.floor(n / 2);
  if (d < exact) return base + d;
  if (exact === 0 || maxDistance <= exact) return base + n - 1;
  return base + Math.min(n - 1, exact + Math.floor(Math.log(d / exact) / Math.log(maxDistance / exact) * (n - exact)));
}

test('T5 buckets: every pair follows the rule, under both alignments and directions', async () => {
  const { page, problems, close } = await env.open('#c5-t5');
  try {
    const fig = page.locator('[data-testid="figure-c5-t5"]');
    await fig.scrollIntoViewIfNeeded();
    const check = async (bi, offset, what) => {
      const got = await cells(page, 'c5-t5-buckets');
      assert.equal(got.length, 4 * 8);
      for (const c of got) assert.equal(c.value, t5Bucket(c.j - (c.i + offset), bi, 8, 10), `${what}: (${c.i}, ${c.j})`);
    };
    await check(true, 0, 'bidirectional, top-left');
    assert.match(await fig.locator('[data-testid="c5-t5-summary"]').textContent(), /^Distances into the past per bucket: 0: 0; 1: 1; 2: 2–4; 3: 5\+\.$/);
    await fig.locator('[data-testid="c5-t5align-bottom_right"]').check();
    await page.waitForFunction(() => /c5\.t5align=bottom_right/.test(location.search));
    await check(true, 4, 'bidirectional, bottom-right');
    await fig.locator('[data-testid="c5-t5dir-causal"]').check();
    await page.waitForFunction(() => /c5\.t5dir=causal/.test(location.search));
    await check(false, 4, 'causal, bottom-right');
    await fig.locator('[data-testid="reset"]').click();
    assert.doesNotMatch(page.url(), /c5\.t5/);
    await fig.screenshot({ path: join(ARTIFACTS, 'ch5-t5-desktop.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('graph: edges are the mask; isolated node without self-loop has a zero row', async () => {
  const { page, problems, close } = await env.open('#c5-graph');
  try {
    const fig = page.locator(GRAPH);
    await fig.scrollIntoViewIfNeeded();
    let w = await cells(page, 'c5-graph-weights');
    const rowOf = (i) => w.filter((c) => c.i === i);
    assert.deepEqual(rowOf(4).map((c) => c.value), [0, 0, 0, 0, 1], 'node 5: self only');
    assert.equal(rowOf(3).filter((c) => c.value > 0).length, 2, 'node 4: itself and node 3');
    await fig.locator('[data-testid="c5-self"]').uncheck();
    await page.waitForFunction(() => /c5\.self=0(&|$)/.test(location.search));
    w = await cells(page, 'c5-graph-weights');
    assert.deepEqual(rowOf(4).map((c) => c.value), [0, 0, 0, 0, 0], 'empty row: zeros, not NaN');
    await fig.locator('[data-testid="c5-edge-1-5"]').check();
    await page.waitForFunction(() => /c5\.edges=/.test(location.search));
    w = await cells(page, 'c5-graph-weights');
    assert.equal(rowOf(4)[0].value, 1, 'node 5 attends to node 1 only');
    assert.equal(await page.locator('[data-testid="c5-graph"] line').count(), 5);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('softcap: the cap bounds the logits and softens a one-sided row', async () => {
  const { page, problems, close } = await env.open('#c5-softcap');
  try {
    const fig = page.locator(CAP);
    await fig.scrollIntoViewIfNeeded();
    const capped = () => page.locator('[data-testid="c5-cap-bars"]').getAttribute('data-capped').then((s) => s.split(',').map(Number));
    const w20 = await capped();
    const z = [40, 30, 20, 5, 0].map((s) => 20 * Math.tanh(s / 20));
    const sum = z.reduce((a, x) => a + Math.exp(x - z[0]), 0);
    assert.ok(Math.abs(w20[0] - 1 / sum) < 1e-4, `capped weight of key 1 (${w20[0]})`);
    assert.ok(w20[0] < 0.8);
    await fig.locator('[data-testid="c5-cap"]').fill('2'); // c = 100
    await page.waitForFunction(() => /c5\.cap=100(&|$)/.test(location.search));
    assert.ok((await capped())[0] > w20[0]);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('fill values: float32 -inf gives NaN, fp16 -1e9 is stored as -inf (PyTorch raises), bf16 rounds, qkscope gives zeros', async () => {
  const { page, problems, close } = await env.open('#c5-empty');
  try {
    const fig = page.locator(PREC);
    await fig.scrollIntoViewIfNeeded();
    const read = (id) => fig.locator(`[data-testid="${id}"]`).getAttribute('data-value');
    assert.equal(await read('c5-prec-nan'), '4');
    assert.equal(await read('c5-prec-row2'), 'nan');
    const naive = await cells(page, 'c5-prec-naive');
    assert.deepEqual(naive.filter((c) => c.i === 1).map((c) => c.text), ['NaN', 'NaN', 'NaN', 'NaN']);
    const good = await cells(page, 'c5-prec-correct');
    assert.deepEqual(good.filter((c) => c.i === 1).map((c) => c.value), [0, 0, 0, 0]);

    await fig.locator('[data-testid="c5-dtype-float16"]').check();
    await fig.locator('[data-testid="c5-fill-1e9"]').check();
    await page.waitForFunction(() => /c5\.fill=1e9(&|$)/.test(location.search) && /c5\.dtype=float16/.test(location.search));
    assert.equal(await read('c5-prec-stored'), '-Infinity');
    assert.equal(await fig.locator('[data-testid="c5-prec-stored"]').textContent(), '\u2212\u221e');
    assert.equal(await read('c5-prec-raises'), 'true');
    assert.equal(await read('c5-prec-row2'), 'nan');
    // The summary counts rows from 1, like the table (the core's own line counts from 0).
    assert.equal(await fig.locator('[data-testid="c5-prec-summary"]').textContent(),
      'masked_fill + softmax in float16: the fill \u22121e9 is stored as \u2212\u221e (PyTorch would raise an overflow error); 6 inf in the filled scores; NaN in row 2 (4 cells).');
    assert.match(await fig.locator('[data-testid="c5-prec-summary"]').getAttribute('data-core'), /stored as -inf.*NaN in rows \[1\]/);
    await fig.screenshot({ path: join(ARTIFACTS, 'ch5-precision-desktop.png') });

    await fig.locator('[data-testid="c5-dtype-bfloat16"]').check();
    await page.waitForFunction(() => /c5\.dtype=bfloat16/.test(location.search));
    assert.equal(await read('c5-prec-stored'), '-998244352');
    assert.equal(await read('c5-prec-raises'), 'false');
    assert.equal(await read('c5-prec-row2'), 'uniform');

    await fig.locator('[data-testid="c5-dtype-float16"]').check();
    await fig.locator('[data-testid="c5-fill-min"]').check();
    await page.waitForFunction(() => /c5\.fill=min/.test(location.search) && /c5\.dtype=float16/.test(location.search));
    assert.equal(await read('c5-prec-stored'), '-65504');
    assert.equal(await read('c5-prec-nan'), '0');
    assert.equal(await read('c5-prec-row2'), 'uniform');
    noProblems(problems);
  } finally {
    await close();
  }
});

test('hostile URL values never become markup and fall back to defaults', async () => {
  const evil = encodeURIComponent('<img src=x onerror=alert(1)>');
  const { page, problems, close } = await env.open(`?c5.lq=${evil}&c5.dtype=${evil}&c5.fill=${evil}&c5.edges=1e99&c5.heads=${evil}#ch5`);
  try {
    await page.locator(PREC).scrollIntoViewIfNeeded();
    await noInjectedMarkup(page);
    assert.equal(await page.locator(MASK).locator('[data-testid="c5-lq"]').inputValue(), '3');
    assert.equal(await page.locator(PREC).locator('[data-testid="c5-dtype-float32"]').isChecked(), true);
    assert.equal(await page.locator(PREC).locator('[data-testid="c5-fill-inf"]').isChecked(), true);
    assert.equal(await page.locator('[data-testid="c5-graph"] line').count(), 10, 'edges clamped to all 10');
    noProblems(problems);
  } finally {
    await close();
  }
});

test('language switch keeps the reader\'s place (the block at the top stays at the top)', async () => {
  const { page, problems, close } = await env.open('#c5-empty');
  try {
    await page.locator(PREC).scrollIntoViewIfNeeded();
    await page.evaluate(() => window.scrollBy(0, 40));
    const before = await page.evaluate(() => ({ y: window.scrollY, top: document.getElementById('figure-c5-precision').getBoundingClientRect().top }));
    assert.ok(before.y > 1000, `scrolled down (${before.y})`);
    // Pressed where the reader is (a click that does not first scroll the page to the button).
    await page.evaluate(() => document.querySelector('[data-testid="lang-zh"]').click());
    await page.waitForFunction(() => document.documentElement.lang === 'zh-CN');
    const after = await page.evaluate(() => ({ y: window.scrollY, top: document.getElementById('figure-c5-precision').getBoundingClientRect().top }));
    assert.ok(after.y > 1000, `not back at the top (${after.y})`);
    assert.ok(Math.abs(after.top - before.top) < 120, `Figure 5.6 stays in view: top ${before.top} -> ${after.top}`);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('language switch: Chinese headings and labels', async () => {
  const { page, problems, close } = await env.open('?c5.lq=2&c5.lk=4#ch5');
  try {
    await page.click('[data-testid="lang-zh"]');
    await page.waitForFunction(() => /掩码与偏置/.test(document.getElementById('ch5-title')?.textContent ?? ''));
    assert.match(await page.textContent('[data-testid="section-c5-structure"]'), /右下对齐/);
    assert.equal(await counts(page, 'c5-visible-br'), '3,4');
    assert.match(await page.textContent(PREC), /存储数据类型/);
    // The Fig 5.6 summary is in Chinese (the core's English line stays in a data attribute).
    assert.equal(await page.locator('[data-testid="c5-prec-summary"]').textContent(),
      '在 float32 中 masked_fill 并做 softmax：填充值 \u2212\u221e 存为 \u2212\u221e；填充后的分数中有 6 个 inf；第 2 行为 NaN（4 个单元格）。');
    await page.locator(MASK).screenshot({ path: join(ARTIFACTS, 'ch5-mask-zh.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('exports of every figure; phone width has no sideways scroll; screenshots at 390 px', async () => {
  const { page, problems, close } = await env.open('#ch5', { viewport: PHONE });
  try {
    for (const id of ['figure-c5-mask', 'figure-c5-alibi', 'figure-c5-t5', 'figure-c5-graph', 'figure-c5-softcap', 'figure-c5-precision']) {
      await page.locator(`[data-testid="${id}"]`).scrollIntoViewIfNeeded();
      const files = await checkExports(page, id);
      if (id === 'figure-c5-precision') assert.match(files.csv.bytes.toString('utf8'), /^matrix,query,key,value\r\nscores,1,1,2/);
      if (id === 'figure-c5-alibi') assert.equal(JSON.parse(files.json.bytes.toString('utf8')).data.slopes.length, 8);
    }
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `page scrolls sideways by ${overflow}px at 390px`);
    for (const [sel, name] of [[MASK, 'mask'], [ALIBI, 'alibi'], [GRAPH, 'graph'], [CAP, 'softcap'], [PREC, 'precision']])
      await page.locator(sel).screenshot({ path: join(ARTIFACTS, `ch5-${name}-phone.png`) });
    noProblems(problems);
  } finally {
    await close();
  }
});
