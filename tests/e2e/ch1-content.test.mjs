// tests/e2e/ch1-content.test.mjs — chapter 1's additions in the built page: where q, k and v
// come from (before the worked example), the comparison table of the scoring functions (one
// row per entry of the core's registry, its d_q != d_k column from the registry), the linked
// terms that outline the cells of Figure 1.1 they name; axe-core finds no violation, and
// screenshots at 1440 and 390 px, light and dark, en and zh.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ARTIFACTS, PHONE, axeViolations, noProblems, usePage } from './chapter-helpers.mjs';
import { load } from '../wasm/helpers.mjs';

const env = usePage();
const qk = await load();
test('q, k, v come before the worked example; the comparison table has one row per registered scoring function', async () => {
  const { page, problems, close } = await env.open('#ch1');
  try {
    const ids = await page.$$eval('article.chapter section[id]', (ss) => ss.map((s) => s.id));
    assert.ok(ids.indexOf('qkv') >= 0 && ids.indexOf('qkv') < ids.indexOf('worked'), `sections: ${ids}`);
    const rows = await page.$$eval('[data-testid="c1-compare"] tbody tr', (trs) => trs.map((tr) => ({ name: tr.dataset.score, sameDim: tr.dataset.sameDim, cells: [...tr.children].map((c) => c.textContent) })));
    assert.deepEqual(rows.map((r) => r.name), qk.scoreFunctions.map((f) => f.name));
    for (const r of rows) {
      const f = qk.scoreFunctions.find((g) => g.name === r.name);
      assert.equal(r.cells[4], f.sameDim ? 'no' : 'yes', `${r.name}: d_q != d_k allowed`);
      assert.ok(!r.cells.includes('not described yet'), `${r.name} is described`);
    }
    assert.match(rows.find((r) => r.name === 'linear_concat').cells[6], /^no/);
    assert.equal(await page.locator('[data-testid="c1-compare"] .katex').count() >= qk.scoreFunctions.length, true, 'formulas set by KaTeX');
    noProblems(problems);
  } finally {
    await close();
  }
});

test('linked terms outline the cells they name in Figure 1.1, by pointer and by keyboard', async () => {
  const { page, problems, close } = await env.open('#ch1');
  try {
    await page.locator('[data-testid="c1-terms"]').scrollIntoViewIfNeeded();
    const hits = () => page.$$eval('.c1-term-hit', (cs) => cs.map((c) => `${c.closest('[data-testid]').dataset.testid}:${c.dataset.i},${c.dataset.j}`));
    await page.focus('[data-testid="c1-term-w1"]');
    assert.deepEqual(await hits(), ['heatmap-weights:0,0', 'heatmap-weights:0,1', 'heatmap-weights:0,2']);
    await page.keyboard.press('Tab');
    assert.deepEqual(await hits(), ['heatmap-weights:0,2']);
    await page.hover('[data-testid="c1-term-o1"]');
    assert.deepEqual(await hits(), ['output-matrix:0,0', 'output-matrix:0,1', 'output-matrix:0,2', 'output-matrix:0,3']);
    await page.hover('[data-testid="c1-term-S"]');
    assert.equal((await hits()).length, 9);
    noProblems(problems);
  } finally {
    await close();
  }
});

for (const lang of ['en', 'zh']) {
  for (const scheme of ['light', 'dark']) {
    test(`chapter 1: axe-core finds no violation; screenshots at 1440 and 390 px (${lang}, ${scheme})`, async () => {
      for (const [name, viewport] of [['1440', { width: 1440, height: 900 }], ['390', PHONE]]) {
        const { page, problems, close } = await env.open(`${lang === 'zh' ? '?lang=zh' : ''}#ch1`, { viewport, colorScheme: scheme });
        try {
          const found = await axeViolations(page);
          assert.deepEqual(found, [], found.join('\n'));
          await page.screenshot({ path: join(ARTIFACTS, `ch1-${lang}-${scheme}-${name}.png`), fullPage: true });
          noProblems(problems);
        } finally {
          await close();
        }
      }
    });
  }
}
