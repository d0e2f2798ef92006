// scripts/bench-load.mjs — `npm run bench:load`: how long a fresh load of a chapter takes on
// the production build (`vite preview` of web/dist) in headless Chromium, each load in a new
// browser context (cold HTTP cache). Per address: ready (navigation start to #app[data-ready],
// the time tests/e2e/main-thread.test.mjs budgets), the end of the first frame after it, and
// the longest animation frame during the load; median and best of --runs, and the median's
// ratio to the 1.5 s budget. Prints a Markdown table with the machine, writes JSON.
//   node scripts/bench-load.mjs [--runs 10] [--hashes '#ch1,#ch7'] [--json build/bench/load.json]
//        [--width 1280]
// Needs `npm run build:web` first.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, startPreview } from '../tests/e2e/server.mjs';
import { recordReady } from '../tests/e2e/load-timing.mjs';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const BUDGET_MS = 1500;

function parseArgs(argv) {
  const o = { runs: 10, hashes: ['#ch1', '#ch7'], json: join(repoRoot, 'build/bench/load.json'), width: 1280 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new RangeError(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--runs') {
      const n = Number(v());
      if (!Number.isInteger(n) || n < 1) throw new RangeError(`--runs must be a positive integer, got "${argv[i]}"`);
      o.runs = n;
    } else if (a === '--hashes') {
      o.hashes = v().split(',').map((h) => h.trim()).filter(Boolean);
      const bad = o.hashes.find((h) => !h.startsWith('#') && !h.startsWith('?'));
      if (bad !== undefined || o.hashes.length === 0) throw new RangeError(`--hashes takes addresses like #ch1 or ?lang=zh#ch2, got "${argv[i]}"`);
    } else if (a === '--json') o.json = v();
    else if (a === '--width') {
      const n = Number(v());
      if (!(n >= 200 && n <= 4000)) throw new RangeError(`--width must be 200..4000 px, got "${argv[i]}"`);
      o.width = Math.round(n);
    } else if (a === '--help' || a === '-h') {
      console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(0, 9).join('\n'));
      process.exit(0);
    } else throw new RangeError(`unknown option ${a} (try --help)`);
  }
  return o;
}

/** Long animation frames (Chromium's LoAF API), buffered from navigation start. */
function recordFrames() {
  window.__frames = [];
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) window.__frames.push({ start: e.startTime, duration: e.duration });
  }).observe({ type: 'long-animation-frame', buffered: true });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const ms = (x) => Math.round(x);

async function loadOnce(browser, url, width) {
  const context = await browser.newContext({ viewport: { width, height: 900 }, deviceScaleFactor: 1 });
  try {
    await context.addInitScript(recordReady);
    await context.addInitScript(recordFrames);
    const page = await context.newPage();
    await page.goto(url);
    await page.waitForFunction(() => window.__paintedAt !== undefined, null, { timeout: 30000 });
    const state = await page.evaluate(() => document.getElementById('app').dataset.ready);
    if (state !== 'true') throw new Error(`${url}: the page did not load (data-ready="${state}")`);
    const r = await page.evaluate(() => ({ ready: window.__readyAt, painted: window.__paintedAt, frames: window.__frames }));
    const during = r.frames.filter((f) => f.start < r.painted);
    return { ready: r.ready, painted: r.painted, longestFrame: Math.max(0, ...during.map((f) => f.duration)) };
  } finally {
    await context.close();
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const server = await startPreview();
  const browser = await launchChromium();
  const rows = [];
  try {
    for (const hash of o.hashes) {
      const loads = [];
      for (let k = 0; k < o.runs; k++) loads.push(await loadOnce(browser, `${server.url}${hash}`, o.width));
      const pick = (key) => loads.map((l) => l[key]);
      const row = {
        address: hash,
        readyMedian: ms(median(pick('ready'))), readyBest: ms(Math.min(...pick('ready'))),
        paintedMedian: ms(median(pick('painted'))), longestFrameMedian: ms(median(pick('longestFrame'))),
        loads: loads.map((l) => ({ ready: ms(l.ready), painted: ms(l.painted), longestFrame: ms(l.longestFrame) })),
      };
      row.budgetRatio = Math.round((row.readyMedian / BUDGET_MS) * 100) / 100;
      rows.push(row);
      process.stderr.write(`${hash}: ready median ${row.readyMedian} ms, first frame ${row.paintedMedian} ms\n`);
    }
  } finally {
    await browser.close();
    await server.close();
  }
  const machine = { cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, loadavg: loadavg().map((x) => Math.round(x * 100) / 100), chromium: browser.version(), node: process.version };
  const line = (cells) => `| ${cells.join(' | ')} |`;
  console.log(`Fresh loads of the production build, ${o.runs} per address, viewport ${o.width} px (ms since navigation start)`);
  console.log(`Machine: ${machine.cpu}, ${machine.cores} cores, load ${machine.loadavg.join(' ')}; Chromium ${machine.chromium} headless\n`);
  console.log(line(['address', 'ready, median', 'ready, best', 'median / 1.5 s budget', 'first frame, median', 'longest frame, median']));
  console.log(line(['---', '---:', '---:', '---:', '---:', '---:']));
  for (const r of rows) console.log(line([r.address, r.readyMedian, r.readyBest, `${r.budgetRatio}×`, r.paintedMedian, r.longestFrameMedian]));
  mkdirSync(dirname(o.json), { recursive: true });
  writeFileSync(o.json, `${JSON.stringify({ machine, runs: o.runs, viewport: o.width, budgetMs: BUDGET_MS, addresses: rows }, null, 2)}\n`);
  console.log(`\nJSON: ${o.json}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
