// train_steps.mjs — training steps per second of the wasm training module (createTrainer,
// wasm/dist/qkscope_train.wasm) at the issue-14 target configuration: task reverse, batch
// 32, length 12, width 32, one layer, one head, scaled_dot, softmax, one thread. Runs in
// Node and in headless Chromium (playwright-core, /usr/bin/chromium; files served from the
// repository through page.route, no server). Best of `reps` runs of `steps` steps each.
//   node native/bench/train_steps.mjs [--steps 300] [--reps 3] [--score scaled_dot] [--no-browser]
//     [--dist DIR]   another build's wasm/dist (an A/B against an older commit's module)
// Results and predictions: native/bench/NOTES.md, "Training steps per second".
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? dflt : process.argv[i + 1];
};
const steps = Number(arg('steps', 300)), reps = Number(arg('reps', 3)), score = arg('score', 'scaled_dot');
const dist = arg('dist', join(root, 'wasm/dist'));
const options = { task: 'reverse', score, batch: 32, length: 12, width: 32, heads: 1, layers: 1, seed: 1 };

/** Best ms per step over `reps` fresh trainers (runs where it is called: Node or the page). */
async function measure(createQkScopeTrain, wasmBinary, options, steps, reps) {
  const m = await createQkScopeTrain({ wasmBinary });
  let best = Infinity;
  for (let r = 0; r < reps; ++r) {
    const t = m.createTrainer(options);
    t.step(10);  // warm-up: tier-up of the wasm code, first allocations
    const t0 = performance.now();
    t.step(steps);
    best = Math.min(best, (performance.now() - t0) / steps);
    t.delete();
  }
  return best;
}

const wasm = readFileSync(join(dist, 'qkscope_train.wasm'));
const { default: create } = await import(join(dist, 'qkscope_train.mjs'));
const cpu0 = process.cpuUsage();
const node = await measure(create, wasm, options, steps, reps);
const cpu = process.cpuUsage(cpu0);  // CPU time of the whole measurement: less load-sensitive than wall
const cpuMs = (cpu.user + cpu.system) / 1000 / (reps * (steps + 10));
console.log(`node ${process.version}: ${node.toFixed(3)} ms/step wall (best of ${reps}), ${(1000 / node).toFixed(0)} steps/s; ` +
  `CPU ${cpuMs.toFixed(3)} ms/step (mean, incl. warm-up and setup) (${score})`);

if (!process.argv.includes('--no-browser')) {
  const { launchChromium } = await import('../../tests/e2e/server.mjs');
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.route('http://qk.test/**', (route) => {
      const path = new URL(route.request().url()).pathname;
      const type = path.endsWith('.wasm') ? 'application/wasm' : path.endsWith('.mjs') ? 'text/javascript' : 'text/html';
      const file = path.startsWith('/wasm/dist/') ? join(dist, path.slice('/wasm/dist/'.length)) : join(root, path);
      route.fulfill({ status: 200, contentType: type, body: path === '/' ? '<title>train</title>' : readFileSync(file) });
    });
    await page.goto('http://qk.test/');
    const ms = await page.evaluate(async ([src, options, steps, reps]) => {
      const measure = eval(`(${src})`);
      const { default: create } = await import('/wasm/dist/qkscope_train.mjs');
      const bytes = new Uint8Array(await (await fetch('/wasm/dist/qkscope_train.wasm')).arrayBuffer());
      return measure(create, bytes, options, steps, reps);
    }, [measure.toString(), options, steps, reps]);
    const version = browser.version();
    console.log(`chromium ${version}: ${ms.toFixed(3)} ms/step, ${(1000 / ms).toFixed(0)} steps/s (${score})`);
  } finally {
    await browser.close();
  }
}
