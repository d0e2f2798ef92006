// tests/e2e/sliders-perf.test.mjs — sliders follow the hand (issue 11, part 6) on the built
// page: the sliders of chapters 1, 4 and 8 named in the issue and chapter 9's L (the slowest
// since the ninth pass), dragged with the mouse, stay
// under a 50 ms median from input event to next paint (the target, 16 ms for every slider, is
// measured by `npm run bench:sliders`; this looser bound catches regressions on a loaded
// machine), and a drag rewrites the address a few times (throttled), not on every input event,
// with the final value in it once the slider is released.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { noProblems, usePage } from './chapter-helpers.mjs';
import { dragSlider, installProbe, settle } from './slider-latency.mjs';

const env = usePage();
const BOUND_MS = 50;

for (const [chapter, slider] of [['ch1', 'fig1-tau'], ['ch4', 'c4-tau'], ['ch8', 'c8-m'], ['ch9', 'c9-l']]) {
  test(`${chapter} ${slider}: median input-to-paint under ${BOUND_MS} ms while dragged`, async () => {
    const { page, problems, close } = await env.open(`#${chapter}`);
    try {
      const r = await dragSlider(page, `#${slider}`, { n: 20 });
      assert.ok(r.median < BOUND_MS, `${slider}: median ${r.median} ms (samples ${r.samples.join(', ')})`);
      noProblems(problems);
    } finally {
      await close();
    }
  });
}

test('a drag writes the address throttled, and the released value is in it', async () => {
  const { page, problems, close } = await env.open('#ch4');
  try {
    await installProbe(page);
    const input = page.locator('#c4-tau');
    await input.scrollIntoViewIfNeeded();
    await settle(page);
    await page.evaluate(() => {
      window.__writes = 0;
      const orig = history.replaceState.bind(history);
      history.replaceState = (...a) => {
        if (String(a[2] ?? '').includes('c4.tau')) window.__writes++;
        return orig(...a);
      };
    });
    const box = await input.boundingBox();
    const y = box.y + box.height / 2;
    await page.mouse.move(box.x + box.width / 2, y);
    await page.mouse.down();
    const t0 = Date.now();
    for (let k = 1; k <= 30; k++) await page.mouse.move(box.x + box.width / 2 + k * 4, y);
    const ms = Date.now() - t0;
    const inputs = await page.evaluate(() => window.__qkLat.samples.length + 0);
    const during = await page.evaluate(() => window.__writes);
    assert.ok(inputs >= 20, `the drag fired input events (${inputs})`);
    assert.ok(during <= Math.ceil(ms / 250) + 1, `${during} address writes during a ${ms} ms drag of ${inputs} input events`);
    await page.mouse.up();
    const value = await input.evaluate((e) => Number((10 ** Number(e.value)).toPrecision(3)));
    await page.waitForFunction((v) => new URLSearchParams(location.search).get('c4.tau') === String(v), value, { timeout: 1000 });
    noProblems(problems);
  } finally {
    await close();
  }
});
