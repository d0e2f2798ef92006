// scripts/bench-sliders.mjs — `npm run bench:sliders`: every slider of every chapter, dragged
// with the mouse in headless Chromium on the production build (`vite preview` of web/dist),
// input event to the end of the next rendered frame (tests/e2e/slider-latency.mjs says exactly
// what a sample is). Each slider starts from a fresh load of its chapter at the default state
// (every figure with a slider has L <= 64 there). Prints a Markdown table, writes JSON.
//   node scripts/bench-sliders.mjs [--samples 20] [--chapters ch1,ch4] [--json build/bench/sliders.json]
//        [--width 1280] [--target 16]
// Needs `npm run build:web` first. Exit status 1 when a slider's median is over --target.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium, startPreview } from '../tests/e2e/server.mjs';
import { dragSlider, slidersOf, walk, waitForApp } from '../tests/e2e/slider-latency.mjs';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
/** State that enables a slider which is disabled by default (w, g and r act only on the window pattern). */
export const ENABLE = { 'c8-w': 'c8.pattern=window', 'c8-g': 'c8.pattern=window', 'c8-r': 'c8.pattern=window' };

function parseArgs(argv) {
  const o = { samples: 20, chapters: null, json: join(repoRoot, 'build/bench/sliders.json'), width: 1280, target: 16 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new RangeError(`${a} needs a value`);
      return argv[++i];
    };
    const pos = (s) => {
      const n = Number(s);
      if (!(n > 0)) throw new RangeError(`${a} must be a positive number, got "${s}"`);
      return n;
    };
    if (a === '--samples') o.samples = Math.round(pos(v()));
    else if (a === '--chapters') o.chapters = v().split(',');
    else if (a === '--json') o.json = v();
    else if (a === '--width') o.width = Math.round(pos(v()));
    else if (a === '--target') o.target = pos(v());
    else if (a === '--help' || a === '-h') {
      console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(0, 8).join('\n'));
      process.exit(0);
    } else throw new RangeError(`unknown option ${a} (try --help)`);
  }
  return o;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const server = await startPreview();
  const browser = await launchChromium();
  const rows = [];
  try {
    const context = await browser.newContext({ viewport: { width: o.width, height: 900 }, deviceScaleFactor: 1 });
    const page = await context.newPage();
    const open = async (id, query = '') => {
      await page.goto('about:blank');
      await page.goto(`${server.url}${query ? `?${query}` : ''}#${id}`);
      await waitForApp(page);
    };
    await open('ch1');
    const chapters = o.chapters ?? (await page.$$eval('[data-testid="toc"] .toc-ch', (lis) => lis.map((li) => li.dataset.chapter)));
    for (const ch of chapters) {
      await open(ch);
      await walk(page);
      for (const { id } of await slidersOf(page)) {
        await open(ch, ENABLE[id]);
        const r = await dragSlider(page, `#${id}`, { n: o.samples });
        rows.push({ chapter: ch, slider: id, ...r });
        process.stderr.write(`${ch} ${id}: median ${r.median} ms (script ${r.scriptMedian} ms), max ${r.max} ms\n`);
      }
    }
    await context.close();
  } finally {
    await browser.close();
    await server.close();
  }
  const machine = { cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, loadavg: loadavg().map((x) => Math.round(x * 100) / 100), chromium: browser.version(), node: process.version };
  const line = (cells) => `| ${cells.join(' | ')} |`;
  console.log(`Sliders: input event to next paint, median of ${o.samples} mouse-drag events (ms), viewport ${o.width} px`);
  console.log(`Machine: ${machine.cpu}, ${machine.cores} cores, load ${machine.loadavg.join(' ')}; Chromium ${machine.chromium} headless\n`);
  console.log(line(['chapter', 'slider', 'median', 'max', 'script median']));
  console.log(line(['---', '---', '---:', '---:', '---:']));
  for (const r of rows) console.log(line([r.chapter, r.slider, r.median, r.max, r.scriptMedian]));
  const over = rows.filter((r) => r.median >= o.target);
  console.log(`\n${rows.length} sliders; ${over.length} at or over ${o.target} ms median${over.length ? `: ${over.map((r) => r.slider).join(', ')}` : ''}`);
  mkdirSync(dirname(o.json), { recursive: true });
  writeFileSync(o.json, `${JSON.stringify({ machine, samples: o.samples, viewport: o.width, target: o.target, sliders: rows }, null, 2)}\n`);
  console.log(`JSON: ${o.json}`);
  if (over.length) process.exitCode = 1;
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
