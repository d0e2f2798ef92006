// tests/e2e/ch10.test.mjs — chapter 10 (from formula to code) in the built page: the listings
// are the .py files the PyTorch test runs, byte for byte; the polarity table; Figure 10.1's
// naive softmax turns NaN exactly where the core's exp overflows (fp16 past ln 65504 = 11.09)
// while the stable weights stay put; Figure 10.2's q.k overflows fp16 at d = 4096, a = 4 and
// the scaled score does not; the checks for understanding answer from the keyboard; axe-core
// finds no violation; screenshots at 1440 and 390 px, light and dark, en and zh.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ARTIFACTS, PHONE, axeViolations, noProblems, repoRootFile, usePage } from './chapter-helpers.mjs';

const env = usePage();
const rows = (page, id) => page.$$eval(`[data-testid="${id}"] tbody tr`, (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent)));

test('the listings are the files the PyTorch test runs; the polarity table names each convention', async () => {
  const { page, problems, close } = await env.open('#ch10');
  try {
    for (const [which, file] of [['scores', 'scores.py'], ['masks', 'masks.py'], ['normalizers', 'normalizers.py'], ['polarity', 'polarity.py'], ['mixed', 'mixed_precision.py']]) {
      const shown = await page.textContent(`[data-testid="c10-code-${which}"] pre`);
      assert.equal(shown, readFileSync(repoRootFile(`web/src/chapters/ch10-code/code/${file}`), 'utf8').trimEnd(), file);
    }
    const pol = await rows(page, 'c10-polarity');
    assert.equal(pol.length, 5);
    assert.match(pol.find((r) => /MultiheadAttention/.test(r[0]))[2], /True = IGNORE/);
    assert.match(pol.find((r) => /scaled_dot_product_attention/.test(r[0]))[2], /True = may attend/);
    assert.match(pol.find((r) => /Hugging Face/.test(r[0]))[2], /1 = real token/);
    assert.match(pol.find((r) => /FlexAttention/.test(r[0]))[2], /True = may attend/);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('Figure 10.1: naive softmax is NaN past the fp16 threshold, stable weights do not move; Figure 10.2: q.k overflows fp16 at d = 4096', async () => {
  const { page, problems, close } = await env.open('?c10.dtype=float16&c10.c=10.5#ch10');
  try {
    const table = () => rows(page, 'c10-maxshift-table');
    const before = await table();
    // fp16 rounds each e^z (spacing 32 near 60000), so naive and stable agree to about 1e-3 only.
    for (const r of before) assert.ok(Math.abs(Number(r[2]) - Number(r[3])) <= 1e-3, `c = 10.5: naive = stable ${JSON.stringify(before)}`);
    assert.equal(await page.getAttribute('[data-testid="c10-maxshift-status"]', 'data-broken'), 'false');
    // c = 11: every e^z fits fp16, their sum (about 90000) does not: the naive weights are all 0.
    await page.goto(`${env.server.url}?c10.dtype=float16&c10.c=11#ch10`);
    await page.waitForSelector('[data-testid="c10-maxshift-table"] tbody tr');
    assert.deepEqual((await table()).map((r) => r[2]), ['0.0000', '0.0000', '0.0000']);
    assert.equal(await page.getAttribute('[data-testid="c10-maxshift-status"]', 'data-broken'), 'true');
    await page.goto(`${env.server.url}?c10.dtype=float16&c10.c=11.2#ch10`);
    await page.waitForSelector('[data-testid="c10-maxshift-table"] tbody tr');
    const after = await table();
    assert.equal(after[0][2], 'NaN', 'e^11.2 overflows fp16');
    assert.deepEqual(after.map((r) => r[3]), before.map((r) => r[3]), 'stable weights unchanged');
    assert.equal(await page.getAttribute('[data-testid="c10-maxshift-status"]', 'data-broken'), 'true');
    // fp32 holds until 88.72.
    await page.goto(`${env.server.url}?c10.dtype=float32&c10.c=88.6#ch10`);
    await page.waitForSelector('[data-testid="c10-maxshift-table"] tbody tr');
    assert.ok((await table()).every((r) => r[2] !== 'NaN'));
    await page.goto(`${env.server.url}?c10.dtype=float32&c10.c=88.8#ch10`);
    await page.waitForSelector('[data-testid="c10-maxshift-table"] tbody tr');
    assert.equal((await table())[0][2], 'NaN');

    await page.goto(`${env.server.url}?c10.logd=12&c10.a=4#ch10`);
    await page.waitForSelector('[data-testid="c10-overflow-table"] tbody tr');
    const ov = await rows(page, 'c10-overflow-table');
    assert.equal(ov[0][1], '65536', 'q.k = d a^2 = 4096 * 16');
    assert.equal(await page.getAttribute('[data-testid="c10-overflow-table"]', 'data-dot-fits'), 'false');
    assert.equal(ov[1][1], '1024', 'scaled: sqrt(4096) * 16');
    await page.goto(`${env.server.url}?c10.logd=11&c10.a=4#ch10`);
    await page.waitForSelector('[data-testid="c10-overflow-table"] tbody tr');
    assert.equal(await page.getAttribute('[data-testid="c10-overflow-table"]', 'data-dot-fits'), 'true', '2048 * 16 = 32768 fits');
    noProblems(problems);
  } finally {
    await close();
  }
});

test('checks for understanding answer at once, from the keyboard, in both languages', async () => {
  for (const lang of ['en', 'zh']) {
    const { page, problems, close } = await env.open(`${lang === 'zh' ? '?lang=zh' : ''}#ch10`);
    try {
      const fb = page.locator('[data-testid="c10-quiz-q0-feedback"]');
      await page.focus('[data-testid="c10-quiz-q0-o1"]');
      await page.keyboard.press('Space');
      assert.equal(await fb.getAttribute('data-right'), 'false');
      await page.keyboard.press('ArrowUp'); // radio group: moves to and selects option 0
      assert.equal(await fb.getAttribute('data-right'), 'true');
      assert.match(await fb.textContent(), lang === 'zh' ? /正确/ : /Right/);
      noProblems(problems);
    } finally {
      await close();
    }
  }
});

for (const lang of ['en', 'zh']) {
  for (const scheme of ['light', 'dark']) {
    test(`axe-core: no violations; screenshots at 1440 and 390 px (${lang}, ${scheme})`, async () => {
      for (const [name, viewport] of [['1440', { width: 1440, height: 900 }], ['390', PHONE]]) {
        const { page, problems, close } = await env.open(`${lang === 'zh' ? '?lang=zh' : ''}#ch10`, { viewport, colorScheme: scheme });
        try {
          const found = await axeViolations(page);
          assert.deepEqual(found, [], found.join('\n'));
          const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
          assert.ok(overflow <= 0, `page scrolls sideways by ${overflow} px`);
          await page.screenshot({ path: join(ARTIFACTS, `ch10-${lang}-${scheme}-${name}.png`), fullPage: true });
          noProblems(problems);
        } finally {
          await close();
        }
      }
    });
  }
}

test('Figure 10.3: linear concat ranks neighbours the same for every node (static); additive does not (dynamic)', async () => {
  const { page, problems, close } = await env.open('#c10-gat');
  try {
    await page.locator('[data-testid="figure-c10-gat"]').scrollIntoViewIfNeeded();
    const weights = (id) => page.$$eval(`[data-testid="${id}"] g.cell`, (cs) => cs.map((c) => ({ i: +c.dataset.i, j: +c.dataset.j, v: +c.dataset.value, masked: c.dataset.masked === 'true' })));
    // Pairs of neighbours (a, b) seen by two nodes: do both nodes order them the same way?
    const disagreements = (cells) => {
      const w = (i, j) => cells.find((c) => c.i === i && c.j === j);
      let n = 0, pairs = 0;
      for (let i = 0; i < 5; i++) for (let k = i + 1; k < 5; k++) for (let a = 0; a < 5; a++) for (let b = a + 1; b < 5; b++) {
        const [ia, ib, ka, kb] = [w(i, a), w(i, b), w(k, a), w(k, b)];
        if ([ia, ib, ka, kb].some((c) => c.masked) || Math.abs(ia.v - ib.v) < 1e-6 || Math.abs(ka.v - kb.v) < 1e-6) continue;
        pairs++;
        if (Math.sign(ia.v - ib.v) !== Math.sign(ka.v - kb.v)) n++;
      }
      return { n, pairs };
    };
    const st = disagreements(await weights('c10-gat-static'));
    assert.ok(st.pairs > 0);
    assert.equal(st.n, 0, 'linear concat: one ranking for every node');
    const dy = disagreements(await weights('c10-gat-dynamic'));
    assert.ok(dy.n > 0, `additive: some nodes rank shared neighbours differently (${dy.n} of ${dy.pairs})`);
    // Masked cells are exactly the non-edges of the graph, and each row's weights sum to 1.
    for (const c of await weights('c10-gat-static')) if (c.masked) assert.equal(c.v, 0);
    noProblems(problems);
  } finally {
    await close();
  }
});
