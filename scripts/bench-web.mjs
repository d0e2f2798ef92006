// scripts/bench-web.mjs — `npm run bench:web`: attention forward in headless Chromium, one
// thread, wasm SIMD: qkscope's tiled module vs onnxruntime-web vs tfjs-backend-wasm (the page:
// web/bench-web/), plus the native bench's single-thread tiled time for the same shapes in the
// same run (build/bench/native/bench/qkscope_bench; skipped with a message when not built).
// onnxruntime-web runs two graphs (fused MultiHeadAttention, MatMul-Softmax-MatMul); its
// figure is the faster. Outputs are checked against each other before any timing: the run
// fails (exit 1) when two of them differ by more than the stated tolerance. Prints a Markdown table, writes JSON.
//   node scripts/bench-web.mjs [--len 128,256,512,1024,2048] [--causal 0,1] [--dim 64]
//        [--repeats 15] [--warmup 3] [--json build/bench/web.json] [--native PATH | --no-native]
//        [--atol 1e-5] [--rtol 1e-5]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ISOLATION_HEADERS, launchChromium, serveFiles } from '../tests/e2e/server.mjs';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
/**
 * Agreement rule: max |a - b| <= ATOL + RTOL * max|O| for every pair of outputs. float32 with
 * d = 64 and N(0, 1) inputs: each side's rounding error is ~1e-6 here (softmax sums of up to
 * 2048 terms, two GEMMs), so a wrong mask or scale (errors ~0.1 or more) cannot pass.
 */
export const ATOL = 1e-5;
export const RTOL = 1e-5;

function parseArgs(argv) {
  const o = { len: [128, 256, 512, 1024, 2048], causal: [false, true], dim: 64, repeats: 15, warmup: 3, atol: ATOL, rtol: RTOL,
    json: join(repoRoot, 'build/bench/web.json'), native: join(repoRoot, 'build/bench/native/bench/qkscope_bench') };
  const list = (v) => v.split(',').map((x) => {
    const n = Number(x);
    if (!Number.isInteger(n) || n < 1) throw new RangeError(`expected positive integers, got "${v}"`);
    return n;
  });
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) throw new RangeError(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--len') o.len = list(v());
    else if (a === '--causal') o.causal = v().split(',').map((x) => {
      if (x !== '0' && x !== '1') throw new RangeError(`--causal takes 0, 1 or 0,1, got "${x}"`);
      return x === '1';
    });
    else if (a === '--dim') o.dim = list(v())[0];
    else if (a === '--repeats') o.repeats = list(v())[0];
    else if (a === '--warmup') o.warmup = Number(v());
    else if (a === '--json') o.json = v();
    else if (a === '--atol' || a === '--rtol') {
      const x = Number(v());
      if (!(x >= 0)) throw new RangeError(`${a} must be a number >= 0`);
      o[a.slice(2)] = x;
    }
    else if (a === '--native') o.native = v();
    else if (a === '--no-native') o.native = null;
    else if (a === '--help' || a === '-h') {
      console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(0, 10).join('\n'));
      process.exit(0);
    } else throw new RangeError(`unknown option ${a} (see --help)`);
  }
  return o;
}

/** Only the page, the qkscope module and the two peers' dist folders are served. */
const SERVED = ['web/bench-web/', 'wasm/qkscope.js', 'wasm/dist/', 'node_modules/onnxruntime-web/dist/', 'node_modules/@tensorflow/'];

/**
 * Served cross-origin isolated (ISOLATION_HEADERS; every file is same-origin): Chromium then
 * gives performance.now() at 5 us grain instead of 0.1 ms (native/bench/NOTES.md, issue 11,
 * eleventh session). The peers stay on one thread (numThreads, setThreadsCount), isolated or not.
 */
export function serve() {
  return serveFiles((path) => {
    const rel = path.replace(/^\/+/, '');
    return SERVED.some((p) => rel.startsWith(p)) && !rel.endsWith('/') ? join(repoRoot, rel) : null;
  }, { headers: ISOLATION_HEADERS });
}

/** The native bench's single-thread tiled time (median ms) for one shape, or a reason it is missing. */
function nativeTime(bin, { L, d, causal, repeats }) {
  const dir = mkdtempSync(join(tmpdir(), 'qkscope-bench-web-'));
  try {
    const out = join(dir, 'n.json');
    const r = spawnSync(bin, ['--threads', '1', '--batch', '1', '--heads', '1', '--len', String(L), '--dim', String(d),
      '--causal', causal ? '1' : '0', '--repeats', String(repeats), '--naive', '0', '--json', out], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${bin} failed (${r.status}): ${r.stderr}`);
    const j = JSON.parse(readFileSync(out, 'utf8'));
    return { ms: j.tiled_ms, samples: j.tiled_samples_ms, validatedMaxAbs: j.validated_max_abs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const f2 = (x) => (x == null ? '-' : x.toFixed(x < 10 ? 3 : 1));

export async function main(argv) {
  const o = parseArgs(argv);
  let nativeNote = null;
  if (o.native && !existsSync(o.native)) {
    nativeNote = `native column skipped: ${o.native} is not built (cmake --preset bench && cmake --build --preset bench --target qkscope_bench)`;
    o.native = null;
  } else if (!o.native) nativeNote = 'native column skipped (--no-native)';
  if (!existsSync(join(repoRoot, 'wasm/dist/qkscope_tiled.wasm'))) throw new Error('wasm/dist/qkscope_tiled.wasm is missing: run `npm run build:wasm` first');
  if (nativeNote) console.error(`bench:web: ${nativeNote}`);

  const server = await serve();
  const browser = await launchChromium();
  const loadStart = loadavg().map((x) => x.toFixed(2)).join(' ');
  const rows = [];
  let info;
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    page.on('response', (r) => r.status() >= 400 && errors.push(`HTTP ${r.status()}: ${r.url()}`));
    await page.goto(`${server.url}web/bench-web/index.html`);
    await page.waitForFunction(() => window.qkBench, null, { timeout: 30000 }).catch(() => {
      throw new Error(`the benchmark page did not load: ${errors.join('; ')}`);
    });
    info = await page.evaluate(() => window.qkBench.ready);
    for (const causal of o.causal)
      for (const L of o.len) {
        const c = await page.evaluate((a) => window.qkBench.runCase(a), { L, d: o.dim, causal, warmup: o.warmup, repeats: o.repeats });
        const tol = o.atol + o.rtol * c.maxAbsOutput;
        const bad = Object.entries(c.diffs).filter(([, v]) => !(v <= tol));
        if (bad.length) throw new Error(`L=${L} causal=${causal}: outputs disagree beyond ${tol.toExponential(2)}: ${bad.map(([k, v]) => `${k} ${v}`).join(', ')}`);
        const med = Object.fromEntries(Object.entries(c.samples).map(([k, v]) => [k, median(v)]));
        const fastest = Object.fromEntries(Object.entries(c.samples).map(([k, v]) => [k, Math.min(...v)]));
        // The peer's figure is its faster graph (by median): MultiHeadAttention or MatMul-Softmax-MatMul.
        const ortGraph = ['mha', 'msm'].filter((g) => med[`ort_${g}`] !== undefined).sort((a, b) => med[`ort_${a}`] - med[`ort_${b}`])[0];
        const row = { L, d: o.dim, causal, max_abs_output: c.maxAbsOutput, tolerance: tol, max_abs_diff: c.diffs,
          median_ms: med, fastest_ms: fastest, samples_ms: c.samples,
          qkscope_ms: med.qkscope, ort_ms: med[`ort_${ortGraph}`], ort_graph: ortGraph, tfjs_ms: med.tfjs,
          ...(Object.keys(c.ortFailed).length ? { ort_graph_failed: c.ortFailed } : {}) };
        if (o.native) {
          const n = nativeTime(o.native, { L, d: o.dim, causal, repeats: o.repeats });
          Object.assign(row, { native_ms: n.ms, native_fastest_ms: Math.min(...n.samples), native_samples_ms: n.samples, native_validated_max_abs: n.validatedMaxAbs });
        }
        rows.push(row);
        console.error(`bench:web: L=${L} causal=${causal} done`);
      }
    if (errors.length) throw new Error(`page errors: ${errors.join('; ')}`);
  } finally {
    await browser.close();
    await server.close();
  }
  const result = {
    schema: 'qkscope-bench-web', version: 1, date: new Date().toISOString(),
    cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, chromium: browser.version(), node: process.versions.node,
    load_start: loadStart, load_end: loadavg().map((x) => x.toFixed(2)).join(' '),
    threads: 1, warmup: o.warmup, repeats: o.repeats, tolerance_rule: `max|a - b| <= ${o.atol} + ${o.rtol} max|O|`,
    versions: info, native: o.native ? o.native : null, ...(nativeNote ? { native_note: nativeNote } : {}), rows,
  };
  mkdirSync(dirname(o.json), { recursive: true });
  writeFileSync(o.json, JSON.stringify(result, null, 1) + '\n');
  console.log(`# ${result.cpu}, ${result.cores} hardware threads, Chromium ${result.chromium}, load ${loadStart} -> ${result.load_end}`);
  console.log(`# crossOriginIsolated ${info.crossOriginIsolated} (timer grain ${info.crossOriginIsolated ? '5 us' : '0.1 ms'}); tfjs threads ${info.tfjsThreads}`);
  console.log(`# one thread, wasm SIMD; median (fastest) of ${o.repeats} calls after ${o.warmup} warm-up, fresh inputs each, interleaved; onnxruntime-web ${info.onnxruntimeWeb}, tfjs ${info.tfjs}`);
  console.log(`# ort: onnxruntime-web's faster graph (mha: com.microsoft.MultiHeadAttention, msm: MatMul-Softmax-MatMul)`);
  console.log(`# outputs agreed pairwise within ${result.tolerance_rule} before timing${nativeNote ? `; ${nativeNote}` : ''}`);
  console.log('| L | causal | qkscope ms | onnxruntime-web ms | tfjs-wasm ms | native ms | qkscope / ort | qkscope / native | max diff |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  const t = (m, f) => (m === undefined ? '-' : `${f2(m)} (${f2(f)})`);
  for (const r of rows)
    console.log(`| ${r.L} | ${r.causal ? 'yes' : 'no'} | ${t(r.qkscope_ms, r.fastest_ms.qkscope)} | ${t(r.ort_ms, r.fastest_ms[`ort_${r.ort_graph}`])} ${r.ort_graph} | ` +
      `${t(r.tfjs_ms, r.fastest_ms.tfjs)} | ${t(r.native_ms, r.native_fastest_ms)} | ` +
      `${(r.qkscope_ms / r.ort_ms).toFixed(2)} | ${r.native_ms ? (r.qkscope_ms / r.native_ms).toFixed(2) : '-'} | ${Math.max(...Object.values(r.max_abs_diff)).toExponential(1)} |`);
  console.log(`# JSON: ${o.json}`);
  return result;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === normalize(process.argv[1])) {
  main(process.argv.slice(2)).catch((e) => {
    console.error(`bench:web: ${e.message}`);
    process.exit(1);
  });
}
