// native/bench/sliders_ab.mjs — interleaved A/B of two builds of the tutorial (web/dist folders)
// on the sliders' input-to-paint latency (issue 11, NOTES.md "Sliders, twelfth pass"). One run of
// `npm run bench:sliders` (20 samples per slider) swings by 3-6 ms on this shared 2-core machine,
// more than most changes; here both builds are served side by side and each slider is dragged
// on A then B (B then A in odd rounds), the samples pooled per build. A sample is what
// bench:sliders measures (tests/e2e/slider-latency.mjs).
//   node native/bench/sliders_ab.mjs [--rounds 4] [--samples 20] CHAPTER:SLIDER[,...] DIR_A DIR_B
//   e.g. node native/bench/sliders_ab.mjs ch9:c9-l,ch1:fig1-tau build/dist-before web/dist
// Prints per slider and build the median of the pooled samples and of the listeners' script.
import { loadavg } from 'node:os';
import { launchChromium, serveFiles, underDir } from '../../tests/e2e/server.mjs';
import { dragSlider, summary, waitForApp } from '../../tests/e2e/slider-latency.mjs';

function parseArgs(argv) {
  const o = { rounds: 4, samples: 20, rest: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--rounds' || a === '--samples') {
      const n = Number(argv[++i]);
      if (!(Number.isInteger(n) && n > 0)) throw new RangeError(`${a} must be a positive integer, got "${argv[i]}"`);
      o[a.slice(2)] = n;
    } else o.rest.push(a);
  }
  if (o.rest.length !== 3) throw new RangeError('usage: sliders_ab.mjs [--rounds N] [--samples N] CHAPTER:SLIDER[,...] DIR_A DIR_B');
  o.sliders = o.rest[0].split(',').map((s) => {
    const [chapter, slider] = s.split(':');
    if (!chapter || !slider) throw new RangeError(`"${s}" is not CHAPTER:SLIDER`);
    return { chapter, slider };
  });
  return o;
}

/** A static server of one build folder (the page's routes are hashes: / is index.html). */
const serve = (dir) => serveFiles(underDir(dir));

const o = parseArgs(process.argv.slice(2));
const builds = [['A', await serve(o.rest[1])], ['B', await serve(o.rest[2])]];
const browser = await launchChromium();
const pooled = new Map();
const load0 = loadavg();
try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 })).newPage();
  for (let r = 0; r < o.rounds; r++) {
    for (const { chapter, slider } of o.sliders) {
      for (const [name, srv] of r % 2 ? [...builds].reverse() : builds) {
        await page.goto('about:blank');
        await page.goto(`${srv.url}#${chapter}`);
        await waitForApp(page);
        const m = await dragSlider(page, `#${slider}`, { n: o.samples });
        const key = `${slider} ${name}`;
        if (!pooled.has(key)) pooled.set(key, { samples: [], script: [] });
        pooled.get(key).samples.push(...m.samples);
        pooled.get(key).script.push(...m.script);
      }
    }
  }
} finally {
  await browser.close();
  await Promise.all(builds.map(([, s]) => s.close()));
}
const { median, round } = summary;
console.log(`# A = ${o.rest[1]}, B = ${o.rest[2]}; ${o.rounds} rounds x ${o.samples} samples; load ${load0.map((x) => x.toFixed(1)).join(' ')} -> ${loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log('| slider | build | median ms | script median ms | samples |\n|---|---|---:|---:|---:|');
for (const [key, v] of pooled) {
  const [slider, name] = key.split(' ');
  console.log(`| ${slider} | ${name} | ${round(median(v.samples))} | ${round(median(v.script))} | ${v.samples.length} |`);
}
