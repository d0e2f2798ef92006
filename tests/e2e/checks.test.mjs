// tests/e2e/checks.test.mjs — every chapter ends with checks for understanding (shared/quiz.ts):
// in English and Chinese, each question answers at once (right and wrong choices say so and
// why), from the keyboard as a radio group, and axe-core finds no violation in them, light or dark.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ARTIFACTS, noProblems, usePage } from './chapter-helpers.mjs';

const env = usePage();
const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

for (const [lang, scheme] of [['en', 'light'], ['zh', 'dark']]) {
  test(`every chapter has checks for understanding that answer at once (${lang}, ${scheme})`, async () => {
    const query = lang === 'zh' ? '?lang=zh' : '';
    const { page, problems, close } = await env.open(query, { colorScheme: scheme });
    try {
      const ids = await page.$$eval('[data-testid="toc"] .toc-ch', (lis) => lis.map((li) => li.dataset.chapter));
      assert.ok(ids.length >= 10, `chapters: ${ids}`);
      for (const id of ids) {
        const n = id.slice(2);
        await page.goto(`${env.server.url}${query}#c${n}-check`);
        await page.waitForFunction((id) => document.querySelector('article.chapter')?.id === id, id);
        const quiz = page.locator(`[data-testid="c${n}-quiz"]`);
        await quiz.waitFor();
        const questions = await quiz.locator('fieldset').count();
        assert.ok(questions >= 2, `${id}: ${questions} questions`);
        for (let q = 0; q < questions; q++) {
          const fb = page.locator(`[data-testid="c${n}-quiz-q${q}-feedback"]`);
          assert.equal(await fb.textContent(), '', 'no feedback before an answer');
          const options = await quiz.locator(`input[name="c${n}-quiz-q${q}"]`).count();
          const verdicts = [];
          for (let o = 0; o < options; o++) {
            await page.check(`[data-testid="c${n}-quiz-q${q}-o${o}"]`);
            verdicts.push(await fb.getAttribute('data-right'));
            assert.ok((await fb.textContent()).length > 10, `${id} q${q}: an explanation`);
          }
          assert.equal(verdicts.filter((v) => v === 'true').length, 1, `${id} q${q}: exactly one right answer (${verdicts})`);
        }
        if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: axePath });
        const found = await page.evaluate(async (sel) => (await window.axe.run(sel, { resultTypes: ['violations'] })).violations.map((v) => `${v.id}: ${v.nodes.map((x) => x.target.join(' ')).join(', ')}`), `[data-testid="c${n}-quiz"]`);
        assert.deepEqual(found, [], `${id}: ${found.join('\n')}`);
        if (id === 'ch5') await quiz.screenshot({ path: join(ARTIFACTS, `checks-${lang}-${scheme}.png`) });
      }
      noProblems(problems);
    } finally {
      await close();
    }
  });
}
