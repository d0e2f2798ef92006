// train_steps.mjs — training steps per second of the wasm training module (createTrainer,
// wasm/dist/qkscope_train.wasm) at the issue-14 target configuration: task reverse, batch
// 32, length 12, width 32, one layer, one head, scaled_dot, softmax, one thread. Runs in
// Node and in headless Chromium (playwright-core, /usr/bin/chromium; files served from the
// repository through page.route, no server). Best of `reps` runs of `steps` steps each.
//   node native/bench/train_steps.mjs [--steps 300] [--reps 3] [--score scaled_dot] [--no-browser]
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

const wasm = readFileSync(join(root, 'wasm/dist/qkscope_train.wasm'));
const { default: create } = await import(join(root, 'wasm/dist/qkscope_train.mjs'));
const node = await measure(create, wasm, options, steps, reps);
console.log(`node ${process.version}: ${node.toFixed(3)} ms/step, ${(1000 / node).toFixed(0)} steps/s (${score})`);

if (!process.argv.includes('--no-browser')) {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--disable-gpu'] });
  try {
    const page = await browser.newPage();
    await page.route('http://qk.test/**', (route) => {
      const path = new URL(route.request().url()).pathname;
      const type = path.endsWith('.wasm') ? 'application/wasm' : path.endsWith('.mjs') ? 'text/javascript' : 'text/html';
      route.fulfill({ status: 200, contentType: type, body: path === '/' ? '<title>train</title>' : readFileSync(join(root, path)) });
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
