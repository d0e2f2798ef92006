// native/bench/wasm_ab_web.mjs — interleaved A/B of tiled-module builds in one Chromium page
// (issue 11, NOTES.md "issue 11, eleventh session"). On this shared 2-core machine separate runs
// differ by more than the changes measured, so every build is loaded into the same page and
// their attention() calls alternate, each with fresh inputs drawn before the clock starts (as
// bench:web). The page is cross-origin isolated (COOP / COEP), so performance.now() has
// microsecond grain instead of 0.1 ms.
//   node native/bench/wasm_ab_web.mjs [--len 512] [--rounds 5] [--repeats 31] [--profile 0]
//        NAME=DIR ...      (DIR holds qkscope_tiled.mjs and qkscope_tiled.wasm; default:
//                           wasm/dist as "current")
// --profile N: also N calls of the first build under Chromium's sampling profiler (50 us),
// printing self time by function (build the module with --profiling-funcs to get names).
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ISOLATION_HEADERS, launchChromium, serveFiles } from '../../tests/e2e/server.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const args = process.argv.slice(2);
const opt = { len: [512], rounds: 5, repeats: 31, profile: 0, builds: [] };
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--len') opt.len = args[++i].split(',').map(Number);
  else if (a === '--rounds') opt.rounds = Number(args[++i]);
  else if (a === '--repeats') opt.repeats = Number(args[++i]);
  else if (a === '--profile') opt.profile = Number(args[++i]);
  else if (a.includes('=')) {
    const [name, dir] = a.split('=');
    opt.builds.push({ name, dir: resolve(dir) });
  } else throw new RangeError(`unknown argument ${a}`);
}
if (!opt.builds.length) opt.builds.push({ name: 'current', dir: join(root, 'wasm/dist') });
for (const b of opt.builds)
  if (!existsSync(join(b.dir, 'qkscope_tiled.wasm'))) throw new Error(`${b.dir}/qkscope_tiled.wasm is missing`);

// The page: every build's glue imported from its own URL (/v/<k>/), so each is its own instance.
const page = `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module">
import { normals } from '/normals.mjs';
const names = ${JSON.stringify(opt.builds.map((b) => b.name))};
const mods = await Promise.all(names.map((_, k) => import('/v/' + k + '/qkscope_tiled.mjs').then((m) => m.default())));
let seed = 1;
const call = (m, L, d, x) => m.attention({ query: { rows: L, cols: d, data: x.Q }, key: { rows: L, cols: d, data: x.K },
  value: { rows: L, cols: d, data: x.V }, causal: false }).output.data;
const fresh = (L, d) => ({ Q: normals(L * d, seed++), K: normals(L * d, seed++), V: normals(L * d, seed++) });
window.ab = {
  ready: true,
  isolated: globalThis.crossOriginIsolated,
  // One round: warm-up, then repeats calls of every build, alternating; ms per build.
  round(L, d, repeats, flip) {
    const x0 = fresh(L, d), ref = call(mods[0], L, d, x0);
    let maxDiff = 0;
    for (const m of mods.slice(1)) {
      const o = call(m, L, d, x0);
      for (let i = 0; i < o.length; i++) maxDiff = Math.max(maxDiff, Math.abs(o[i] - ref[i]));
    }
    const order = flip ? [...mods.keys()].reverse() : [...mods.keys()];
    const t = names.map(() => []);
    for (let r = 0; r < repeats + 2; r++)
      for (const k of order) {
        const x = fresh(L, d);
        const t0 = performance.now();
        call(mods[k], L, d, x);
        const ms = performance.now() - t0;
        if (r >= 2) t[k].push(ms);
      }
    return { t, maxDiff };
  },
  // Inputs for run(), drawn beforehand so that a profile holds only the calls.
  prepare(L, d, n) { window.inputs = Array.from({ length: n }, () => fresh(L, d)); },
  run(k, L, d) {
    for (const x of window.inputs) call(mods[k], L, d, x);
    window.inputs = null;
  },
};
</script>`;

// COOP / COEP: a cross-origin isolated page gets performance.now() at microsecond grain.
const server = await serveFiles((path) => {
  if (path === '/ab.html') return { body: page, type: 'text/html' };
  if (path === '/normals.mjs') return join(root, 'web/bench-web/normals.mjs');
  const m = /^\/v\/(\d+)\/(qkscope_tiled\.(?:mjs|wasm))$/.exec(path);
  return m && opt.builds[Number(m[1])] ? join(opt.builds[Number(m[1])].dir, m[2]) : null;
}, { headers: ISOLATION_HEADERS });

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const browser = await launchChromium();
try {
  const p = await browser.newPage();
  p.on('pageerror', (e) => console.error(`page error: ${e.message}`));
  await p.goto(`${server.url}ab.html`);
  await p.waitForFunction(() => window.ab?.ready, null, { timeout: 60000 });
  const isolated = await p.evaluate(() => window.ab.isolated);
  console.log(`# Chromium ${browser.version()}, crossOriginIsolated ${isolated}, load ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  for (const L of opt.len) {
    const all = opt.builds.map(() => []);
    console.log(`L = ${L}, d = 64: per round median (fastest) ms of ${opt.repeats} calls, builds alternating`);
    for (let r = 0; r < opt.rounds; r++) {
      const { t, maxDiff } = await p.evaluate(([L, n, flip]) => window.ab.round(L, 64, n, flip), [L, opt.repeats, r % 2 === 1]);
      t.forEach((x, k) => all[k].push(...x));
      console.log(`  round ${r + 1}${r % 2 ? ' (reversed)' : ''}: ` +
        opt.builds.map((b, k) => `${b.name} ${median(t[k]).toFixed(3)} (${Math.min(...t[k]).toFixed(3)})`).join(', ') +
        `; max |diff| ${maxDiff.toExponential(1)}; load ${loadavg()[0].toFixed(2)}`);
    }
    console.log('  all rounds: ' + opt.builds.map((b, k) => `${b.name} ${median(all[k]).toFixed(3)} (${Math.min(...all[k]).toFixed(3)})`).join(', '));
  }
  if (opt.profile > 0) {
    const cdp = await p.context().newCDPSession(p);
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 50 });
    await p.evaluate(([L, n]) => window.ab.prepare(L, 64, n), [opt.len[0], opt.profile]);
    await cdp.send('Profiler.start');
    await p.evaluate((L) => window.ab.run(0, L, 64), opt.len[0]);
    const { profile } = await cdp.send('Profiler.stop');
    const self = new Map();
    const dt = new Map();  // node id -> summed sample time (us)
    profile.samples.forEach((id, k) => dt.set(id, (dt.get(id) ?? 0) + (profile.timeDeltas[k + 1] ?? 0)));
    let total = 0;
    for (const n of profile.nodes) {
      const name = n.callFrame.functionName || `(${n.callFrame.url.split('/').pop() || 'anonymous'})`;
      const us = dt.get(n.id) ?? 0;
      self.set(name, (self.get(name) ?? 0) + us);
      total += us;
    }
    const skip = new Set(['(idle)', '(program)', '(garbage collector)']);
    console.log(`profile of ${opt.profile} calls of ${opt.builds[0].name} at L = ${opt.len[0]}: self time per call (us)`);
    [...self].sort((a, b) => b[1] - a[1]).slice(0, 25).forEach(([name, us]) =>
      console.log(`  ${(us / opt.profile).toFixed(1).padStart(8)}  ${(100 * us / total).toFixed(1).padStart(5)}%  ${skip.has(name) ? name : name.slice(0, 110)}`));
  }
} finally {
  await browser.close();
  await server.close();
}
