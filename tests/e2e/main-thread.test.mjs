// tests/e2e/main-thread.test.mjs — chapter 1 is interactive (the app marks itself ready and its
// controls answer) within 1.5 s of navigation on the production build (issue 11's budget),
// best of three loads. The time is taken in the page, from navigation start to the moment
// #app gets its data-ready attribute (a MutationObserver installed before any page script).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { noProblems, usePage } from './chapter-helpers.mjs';

const env = usePage();
const INTERACTIVE_MS = 1500;

/** Records when #app gets data-ready (ms since navigation start), before any page script runs. */
function recordReady() {
  new MutationObserver((_, obs) => {
    const app = document.getElementById('app');
    if (app?.dataset.ready) {
      window.__readyAt = performance.now();
      obs.disconnect();
    }
  }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-ready'] });
}

test(`chapter 1 is interactive within ${INTERACTIVE_MS} ms of navigation`, async () => {
  // Best of three loads: the first pays for the cold HTTP cache and V8's code cache.
  const times = [];
  for (let k = 0; k < 3; k++) {
    const { page, problems, close } = await env.open('#ch1', { init: recordReady });
    try {
      times.push(await page.evaluate(() => window.__readyAt));
      // Interactive means the controls answer: the temperature slider is there and enabled.
      assert.equal(await page.locator('#fig1-tau').isEnabled(), true);
      noProblems(problems);
    } finally {
      await close();
    }
  }
  const best = Math.min(...times);
  assert.ok(best < INTERACTIVE_MS, `chapter 1 ready ${times.map((t) => t.toFixed(0)).join(', ')} ms after navigation`);
});
