// tests/e2e/ch2.test.mjs — chapter 2 (the scoring functions side by side) in the built page:
// one panel per registry entry on one shared Q/K/V, synchronized cells, the bilinear alpha
// and additive d_h sliders, the difference view, bring-your-own Q/K/V, URL round-trip and
// hostile URL values, the language switch, exports, and screenshots at 390 and 1280 px.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ARTIFACTS, PHONE, cells, checkExports, noInjectedMarkup, noProblems, proseText, usePage, waitReady } from './chapter-helpers.mjs';
import { loadCore } from './server.mjs';

const env = usePage();
const GRID = '[data-testid="figure-c2-grid"]';
const DIFF = '[data-testid="figure-c2-diff"]';

const registry = loadCore;

const rowsOf = (cs) => [...new Set(cs.map((c) => c.i))].map((i) => cs.filter((c) => c.i === i).map((c) => c.text));

test('one panel per scoring function of the registry; cosine ties key 1 and key 3; linear concat ignores the query', async () => {
  const qk = await registry();
  const { page, problems, close } = await env.open('#ch2');
  try {
    const panels = await page.$$eval(`${GRID} .c2-panel`, (ps) => ps.map((p) => p.dataset.testid));
    assert.deepEqual(panels, qk.scoreFunctions.map((f) => `c2-panel-${f.name}`), 'panels follow the registry order');
    const dot = await cells(page, 'c2-hm-dot');
    const cos = await cells(page, 'c2-hm-cosine');
    assert.equal(dot.length, 20, '4 queries x 5 keys');
    // Key 3 = 2 * key 1: the dot product prefers key 3 for query 1, cosine ties them.
    assert.ok(dot[2].value > dot[0].value + 0.5, `dot: key 3 (${dot[2].value}) >> key 1 (${dot[0].value})`);
    assert.equal(cos[0].text, cos[2].text, 'cosine: key 1 and key 3 tie for query 1');
    assert.ok(dot[2].value > cos[2].value + 0.3, 'dot puts far more weight on key 3 than cosine');
    // Linear concat: every row identical (docs/facts.md §2).
    const lc = rowsOf(await cells(page, 'c2-hm-linear_concat'));
    for (const r of lc) assert.deepEqual(r, lc[0], 'every linear-concat row is the same');
    const prose = await page.textContent('[data-testid="section-c2-differences"]');
    // KaTeX repeats the number (MathML annotation + HTML): "is 000,".
    assert.match(prose, /in any column is (0)+, and each row reads/, 'the live spread of linear-concat columns is exactly 0');
    // The alpha = 0 remark names the default alpha (the figure starts at 0.25, not 0).
    assert.match(await proseText(page, 'section-c2-differences'), /set α to 0 in Figure 2\.1 \(its default is 0\.25\)/);
    assert.match(await proseText(page, 'section-c2-params'), /and the reverse when v<0/);
    // The zero difference is the alpha = 0 one; the panels start at the default alpha and differ.
    assert.match(await proseText(page, 'section-c2-params'), /with α=0, the largest difference between the two is 0\. The figure starts at α=0\.25/);
    const bil = await cells(page, 'c2-hm-bilinear');
    assert.ok(bil.some((c, k) => Math.abs(c.value - dot[k].value) > 1e-3), 'at the default alpha the bilinear panel differs from the dot panel');
    // Rows of weights sum to 1.
    for (const r of rowsOf(await cells(page, 'c2-hm-additive'))) {
      const s = r.reduce((a, x) => a + Number(x), 0);
      assert.ok(Math.abs(s - 1) < 0.01, `additive row sums to 1 (${s})`);
    }
    await page.locator(GRID).screenshot({ path: join(ARTIFACTS, 'ch2-grid-desktop.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('sliders and view change the charts and the URL; alpha = 0 makes bilinear equal to dot; reload keeps the state', async () => {
  const { page, problems, close } = await env.open('#ch2');
  try {
    const fig = page.locator(GRID);
    const bilBefore = rowsOf(await cells(page, 'c2-hm-bilinear'));
    await fig.locator('[data-testid="c2-alpha"]').fill('0');
    await page.waitForFunction(() => /[?&]c2\.alpha=0(&|$)/.test(location.search));
    const bil = rowsOf(await cells(page, 'c2-hm-bilinear'));
    assert.notDeepEqual(bil, bilBefore);
    assert.deepEqual(bil, rowsOf(await cells(page, 'c2-hm-dot')), 'W = I: bilinear weights are the dot-product weights');
    assert.match(await page.textContent('[data-testid="c2-diff-summary"]'), /the same/, 'dot - bilinear is 0 at alpha = 0');

    const addBefore = rowsOf(await cells(page, 'c2-hm-additive'));
    await fig.locator('[data-testid="c2-dh"]').fill('12');
    await page.waitForFunction(() => /c2\.dh=12/.test(location.search));
    assert.notDeepEqual(rowsOf(await cells(page, 'c2-hm-additive')), addBefore, 'd_h changes the additive weights');

    await fig.locator('[data-testid="c2-view-scores"]').check();
    await page.waitForFunction(() => /c2\.view=scores/.test(location.search));
    const legend = await page.textContent('[data-testid="c2-hm-dot"] .legend');
    assert.match(legend, /score/);
    const dotScores = await cells(page, 'c2-hm-dot');
    assert.equal(dotScores[2].value, 4, 'raw dot score q1 . k3 = 4');

    await page.locator(DIFF).locator('[data-testid="c2-a"]').selectOption('scaled_dot');
    await page.locator(DIFF).locator('[data-testid="c2-b"]').selectOption('cosine');
    await page.waitForFunction(() => /c2\.a=scaled_dot/.test(location.search) && /c2\.b=cosine/.test(location.search));
    const summary = await page.textContent('[data-testid="c2-diff-summary"]');
    assert.match(summary, /Largest difference 0\.\d{4}/);

    // Reload: the state comes back from the URL.
    await page.reload();
    await waitReady(page);
    assert.equal(await fig.locator('[data-testid="c2-alpha"]').inputValue(), '0');
    assert.equal(await fig.locator('[data-testid="c2-dh"]').inputValue(), '12');
    assert.equal(await fig.locator('[data-testid="c2-view-scores"]').isChecked(), true);
    assert.equal(await page.locator(DIFF).locator('[data-testid="c2-a"]').inputValue(), 'scaled_dot');
    assert.equal(await page.textContent('[data-testid="c2-diff-summary"]'), summary);

    // Reset puts figure 2.1 back (and leaves figure 2.2 alone).
    await fig.locator('[data-testid="reset"]').click();
    assert.equal(await fig.locator('[data-testid="c2-alpha"]').inputValue(), '0.25');
    assert.doesNotMatch(page.url(), /c2\.alpha|c2\.dh|c2\.view/);
    assert.match(page.url(), /c2\.a=scaled_dot/);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('hovering a cell outlines the same cell in every panel', async () => {
  const { page, problems, close } = await env.open('#ch2');
  try {
    await page.locator('[data-testid="c2-hm-dot"] g.cell[data-i="1"][data-j="3"]').hover();
    const linked = await page.$$eval(`${GRID} g.cell.linked`, (gs) => gs.map((g) => `${g.closest('.heatmap').dataset.testid}:${g.dataset.i},${g.dataset.j}`));
    // One panel per registered scoring function: every panel but the hovered one.
    const panels = await page.$$eval('[data-testid^="c2-hm-"]', (hs) => hs.length);
    assert.ok(panels >= 7, `a panel per scoring function (${panels})`);
    assert.equal(linked.length, panels - 1, `every other panel: ${linked}`);
    assert.ok(linked.every((l) => l.endsWith(':1,3')));
    // Keyboard: focus a cell, move, the link follows.
    const first = page.locator('[data-testid="c2-hm-cosine"] g.cell[tabindex="0"]');
    await first.focus();
    await page.keyboard.press('ArrowDown');
    const label = await page.evaluate(() => document.activeElement.getAttribute('aria-label'));
    assert.match(label, /Cosine similarity: query 2, key 1: 0\.\d{3}/);
    assert.equal(await page.locator('[data-testid="c2-hm-dot"] g.cell.linked[data-i="1"][data-j="0"]').count(), 1);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('hostile URL values are ignored or clamped and never become markup', async () => {
  const evil = encodeURIComponent('<img src=x onerror=alert(1)>');
  const { page, problems, close } = await env.open(`?c2.view=${evil}&c2.alpha=${evil}&c2.a=${evil}&c2.b=%3Cscript%3Ealert(1)%3C/script%3E&c2.q=${evil}&c2.dh=1e99&c2.seed=-5#ch2`);
  try {
    await noInjectedMarkup(page);
    const fig = page.locator(GRID);
    assert.equal(await fig.locator('[data-testid="c2-view-weights"]').isChecked(), true);
    assert.equal(await fig.locator('[data-testid="c2-alpha"]').inputValue(), '0.25');
    assert.equal(await fig.locator('[data-testid="c2-dh"]').inputValue(), '16', 'd_h clamped to its maximum');
    assert.equal(await fig.locator('[data-testid="c2-seed"]').inputValue(), '0', 'seed clamped to 0');
    assert.equal(await page.locator(DIFF).locator('[data-testid="c2-a"]').inputValue(), 'dot');
    // q was garbage: parsed as a 1 x 1 zero matrix, so d_q != d_k and the same-width functions explain why they stop.
    assert.match(await page.textContent('[data-testid="c2-panel-dot"] .c2-note'), /dq = dk/, 'drawn as d<sub>q</sub> = d<sub>k</sub>');
    assert.equal(await page.isVisible('[data-testid="c2-hm-bilinear"]'), true);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('bring your own Q, K, V: inline errors, then pasted JSON drives every panel', async () => {
  const { page, problems, close } = await env.open('#ch2');
  try {
    const fig = page.locator(GRID);
    await fig.locator('[data-testid="c2-inputs"] > summary').click();
    await fig.locator('[data-testid="c2-paste"] > summary').click();
    const text = fig.locator('[data-testid="c2-paste-text"]');
    const error = fig.locator('[data-testid="c2-paste-error"]');

    await text.fill('Q\n1, 2\n3, x\n\nK\n1, 0\n0, 1');
    await fig.locator('[data-testid="c2-paste-apply"]').click();
    await error.waitFor({ state: 'visible' });
    assert.equal(await error.getAttribute('role'), 'alert');
    assert.match(await error.textContent(), /Q, row 2, column 2: “x” is not a number/);
    assert.equal(await text.getAttribute('aria-invalid'), 'true');

    await text.fill('{"Q": [[1, 0, 0], [0, 1, 0]], "K": [[1, 0], [0, 1], [1, 1]]');
    await fig.locator('[data-testid="c2-paste-apply"]').click();
    // The whole sentence, with where the JSON broke (not the engine's English message, cut off).
    assert.match(await error.textContent(), /^This is not valid JSON: it stops making sense at line 1, column \d+, near “[^”]+”\.$/);

    await text.fill('{"Q": [[1, 0, 0], [0, 1, 0]], "K": [[1, 0], [0, 1], [1, 1]], "V": [[1], [2]]}');
    await fig.locator('[data-testid="c2-paste-apply"]').click();
    assert.match(await error.textContent(), /K has 3 rows but V has 2/);

    await text.fill('{"q": [[1, 0, 0], [0, 1, 0]], "k": [[1, 0], [0, 1], [1, 1]]}');
    await fig.locator('[data-testid="c2-paste-apply"]').click();
    await error.waitFor({ state: 'hidden' });
    assert.match(await fig.locator('[data-testid="c2-paste-status"]').textContent(), /Q 2 × 3, K 3 × 2, V 3 × 2/);
    assert.match(page.url(), /c2\.q=1,0,0;0,1,0/);
    // d_q = 3 != d_k = 2: dot-family panels say why; bilinear, additive, linear concat compute.
    for (const name of ['dot', 'scaled_dot', 'cosine']) assert.match(await page.textContent(`[data-testid="c2-panel-${name}"] .c2-note`), /dq = dk/);
    for (const name of ['bilinear', 'additive', 'linear_concat']) assert.equal((await cells(page, `c2-hm-${name}`)).length, 6, `${name}: 2 x 3 weights`);
    // The editors follow the new shapes.
    assert.equal(await fig.locator('[data-testid="c2-matrix-q"] input').count(), 6);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('language switch: chapter 2 in Chinese with translated panel titles, state kept', async () => {
  const { page, problems, close } = await env.open('?c2.alpha=0.5#ch2');
  try {
    await page.click('[data-testid="lang-zh"]');
    await page.waitForFunction(() => document.getElementById('ch2-title')?.textContent === '评分函数并排比较');
    assert.equal(await page.textContent('[data-testid="c2-panel-dot"] h3'), '点积');
    assert.match(await page.textContent(GRID), /观察要点。/);
    assert.equal(await page.locator(GRID).locator('[data-testid="c2-alpha"]').inputValue(), '0.5');
    assert.match(page.url(), /lang=zh/);
    assert.match(page.url(), /c2\.alpha=0\.5/);
    const toc = await page.textContent('[data-testid="toc"]');
    assert.match(toc, /评分函数并排比较/);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('exports: PNG, SVG, CSV and JSON of both figures', async () => {
  const { page, problems, close } = await env.open('#ch2');
  try {
    const grid = await checkExports(page, 'figure-c2-grid');
    const csv = grid.csv.bytes.toString('utf8').split('\r\n');
    assert.equal(csv[0], 'matrix,query,key,value');
    assert.equal(csv.filter((l) => l.startsWith('dot.weights,')).length, 20);
    const json = JSON.parse(grid.json.bytes.toString('utf8'));
    assert.equal(json.figure, 'figure-c2-grid');
    assert.deepEqual(json.data.inputs.K[2], [2, 0, 2, 0]);
    assert.match(grid.svg.bytes.toString('utf8'), /Linear concat/);
    const diff = await checkExports(page, 'figure-c2-diff');
    assert.match(diff.csv.bytes.toString('utf8'), /^matrix,query,key,value\r\ndot\.weights,1,1,/);
    noProblems(problems);
  } finally {
    await close();
  }
});

test('phone width: no sideways scroll; screenshots at 390 px', async () => {
  const { page, problems, close } = await env.open('#ch2', { viewport: PHONE });
  try {
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `page scrolls sideways by ${overflow}px at 390px`);
    await page.locator(GRID).screenshot({ path: join(ARTIFACTS, 'ch2-grid-phone.png') });
    await page.locator(DIFF).screenshot({ path: join(ARTIFACTS, 'ch2-diff-phone.png') });
    noProblems(problems);
  } finally {
    await close();
  }
});

test('hostile pasted Q, K, V (markup, huge numbers, deep JSON, a megabyte) are rejected as text, never markup', async () => {
  const { page, problems, close } = await env.open('#ch2');
  try {
    const fig = page.locator(GRID);
    await fig.locator('[data-testid="c2-inputs"] > summary').click();
    await fig.locator('[data-testid="c2-paste"] > summary').click();
    const text = fig.locator('[data-testid="c2-paste-text"]');
    const error = fig.locator('[data-testid="c2-paste-error"]');
    const cases = [
      ['Q\n<img src=x onerror=alert(1)>, 1\n\nK\n1, 0', /is not a number/],
      ['{"Q": [[1e39, 0]], "K": [[1, 0]]}', /is outside/],
      ['{"Q": [[1, 0]], "K": [[1, 0]], "V": [[1e308]]}', /is outside/],
      ['['.repeat(9000) + ']'.repeat(9000), /not valid JSON|must be an object/],
      ['1, '.repeat(400000) + '1', /at most/],
    ];
    for (const [pasted, pattern] of cases) {
      await text.fill('');
      await text.fill(pasted);
      await fig.locator('[data-testid="c2-paste-apply"]').click();
      await page.waitForFunction((re) => new RegExp(re).test(document.querySelector('[data-testid="c2-paste-error"]')?.textContent ?? ''), pattern.source);
      const message = await error.textContent();
      assert.ok(message.length < 400, `the message quotes at most a short prefix (${message.length} chars)`);
      await noInjectedMarkup(page);
    }
    noProblems(problems);
  } finally {
    await close();
  }
});
