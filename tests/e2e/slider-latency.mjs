// tests/e2e/slider-latency.mjs — input-to-paint latency of the tutorial's sliders, dragged
// with the mouse in headless Chromium. Used by `npm run bench:sliders` (scripts/bench-sliders.mjs)
// and by the regression test sliders-perf.test.mjs. Not a test file itself.
//
// What one sample is: a range input's `input` event, from its timeStamp to the end of the next
// frame that the browser renders after it (a requestAnimationFrame callback registered when the
// event starts, then a MessageChannel task: that task runs once the frame's style, layout and
// paint are done). Work a figure defers to its own requestAnimationFrame is inside the sample;
// work deferred past that frame is not, so figures must draw in that frame to look fast here.
// `scriptMs` is the JavaScript the event's listeners ran (capture on window to bubble on window).

/** Installs the probe in the page (idempotent); samples collect in window.__qkLat. */
export async function installProbe(page) {
  await page.evaluate(() => {
    if (window.__qkLat) return;
    const lat = (window.__qkLat = { samples: [], script: [] });
    const isRange = (e) => e.target instanceof HTMLInputElement && e.target.type === 'range';
    let start = 0;
    window.addEventListener('input', (e) => {
      if (!isRange(e)) return;
      start = performance.now();
      const t0 = e.timeStamp;
      requestAnimationFrame(() => {
        const mc = new MessageChannel();
        mc.port1.onmessage = () => lat.samples.push(performance.now() - t0);
        mc.port2.postMessage(null);
      });
    }, true);
    window.addEventListener('input', (e) => {
      if (isRange(e)) lat.script.push(performance.now() - start);
    });
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};
const round = (x) => Math.round(x * 10) / 10;

/** Waits until the page has rendered two frames and the main thread was idle for `ms`. */
export async function settle(page, ms = 150) {
  await page.evaluate((ms) => new Promise((resolve) => {
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(resolve, ms)));
  }), ms);
}

/**
 * Drags the slider `selector` with the mouse, right to its end and back, until `n` samples
 * (after `warmup` discarded ones) are recorded; one mouse move at a time, each waited for.
 * Returns { samples, script, median, max, scriptMedian } (ms).
 */
export async function dragSlider(page, selector, { n = 20, warmup = 2 } = {}) {
  await installProbe(page);
  const input = page.locator(selector);
  await input.scrollIntoViewIfNeeded();
  await settle(page);
  const info = await input.evaluate((el) => {
    const r = el.getBoundingClientRect();
    const min = Number(el.min), max = Number(el.max), step = Number(el.step) || 1;
    return { left: r.left, width: r.width, y: r.top + r.height / 2, frac: max > min ? (Number(el.value) - min) / (max - min) : 0, steps: Math.max(1, Math.round((max - min) / step)) };
  });
  const thumb = 16;
  const xOf = (f) => info.left + thumb / 2 + f * (info.width - thumb);
  // One step per move on a coarse slider (every move is an input event), 1/25 of the track on a fine one.
  const dx = Math.max(2, (info.width - thumb) / Math.min(info.steps, 25));
  let x = xOf(info.frac);
  await page.mouse.move(x, info.y);
  await page.evaluate(() => { window.__qkLat.samples.length = 0; window.__qkLat.script.length = 0; });
  await page.mouse.down();
  let dir = 1;
  let misses = 0;
  const want = n + warmup;
  let have = await page.evaluate(() => window.__qkLat.samples.length);
  while (have < want) {
    if (x + dir * dx > info.left + info.width + 2 || x + dir * dx < info.left - 2) dir = -dir;
    x += dir * dx;
    await page.mouse.move(x, info.y);
    // Wait for this move's sample (a move that did not change the value has none).
    const got = await page.waitForFunction((k) => window.__qkLat.samples.length > k, have, { timeout: 400, polling: 'raf' }).then(() => true, () => false);
    if (!got) {
      if (++misses > 40) throw new Error(`${selector}: mouse moves produce no input events (${have} samples)`);
      continue;
    }
    misses = 0;
    await settle(page, 30);
    have = await page.evaluate(() => window.__qkLat.samples.length);
  }
  await page.mouse.up();
  await settle(page, 300);
  const { samples, script } = await page.evaluate(() => window.__qkLat);
  const s = samples.slice(warmup, want);
  const js = script.slice(warmup, want);
  return { samples: s.map(round), script: js.map(round), median: round(median(s)), max: round(Math.max(...s)), scriptMedian: round(median(js)) };
}

/** The range inputs of the open chapter, in page order: [{ id }]. */
export function slidersOf(page) {
  return page.$$eval('main article input[type="range"]', (els) => els.map((e) => ({ id: e.id })));
}

/** Scrolls through the page so lazily drawn figures draw, then back to the top. */
export async function walk(page) {
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  for (let y = 0; y < height; y += 600) {
    await page.evaluate((y) => window.scrollTo(0, y), y);
    await page.waitForTimeout(40);
  }
  await page.evaluate(() => window.scrollTo(0, 0));
  await settle(page);
}

export const summary = { median, round };

/** Waits until the app has mounted (web/src/main.ts sets #app's data-ready). */
export async function waitForApp(page) {
  await page.waitForFunction(() => document.getElementById('app')?.dataset.ready, null, { timeout: 20000 });
  const ready = await page.evaluate(() => document.getElementById('app').dataset.ready);
  if (ready !== 'true') throw new Error(`page failed to load: ${await page.textContent('#app')}`);
}
