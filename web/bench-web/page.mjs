// web/bench-web/page.mjs — the browser side of `npm run bench:web` (driver: scripts/bench-web.mjs).
// Implementations of softmax(Q K^T / sqrt(d)) V, one head, one thread, wasm SIMD each:
//   qkscope   the tiled wasm module's synchronous attention() (qkscope_tiled.wasm)
//   ort_mha   onnxruntime-web, wasm backend, numThreads = 1: the fused MultiHeadAttention graph
//   ort_msm   the same runtime on MatMul-Softmax-MatMul (both graphs from ./onnx.mjs)
//   tfjs      @tensorflow/tfjs-core + tfjs-backend-wasm, setThreadsCount(1) (SIMD, one thread)
// The page is served cross-origin isolated (scripts/bench-web.mjs), for performance.now()'s
// 5 us grain; every side is still held to one thread.
// Each timed call starts from fresh Float32Array inputs (drawn before the clock starts) and ends
// with the output back in a Float32Array, so every side pays its copies in and out.
// window.qkBench: { ready: Promise<info>, runCase({ L, d, causal, warmup, repeats }) }.
import { loadQkScope } from '/wasm/qkscope.js';
import * as ort from '/node_modules/onnxruntime-web/dist/ort.wasm.min.mjs';
import { attentionModel } from './onnx.mjs';
import { normals } from './normals.mjs';

const tf = globalThis.tf;
const log = (s) => (document.getElementById('log').textContent += `${s}\n`);


async function setup() {
  const qk = await loadQkScope();
  const tiled = await qk.tiled();
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.simd = true;
  ort.env.wasm.wasmPaths = '/node_modules/onnxruntime-web/dist/';
  tf.wasm.setWasmPaths('/node_modules/@tensorflow/tfjs-backend-wasm/dist/');
  tf.wasm.setThreadsCount(1);
  await tf.setBackend('wasm');
  await tf.ready();
  const info = {
    qkscope: qk.version,
    onnxruntimeWeb: ort.env.versions?.web ?? 'unknown',
    tfjs: tf.version_core,
    tfjsBackend: tf.getBackend(),
    tfjsSimd: await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT'),
    tfjsThreads: tf.wasm.getThreadsCount?.() ?? null,
    crossOriginIsolated: globalThis.crossOriginIsolated,
    userAgent: navigator.userAgent,
  };
  log(JSON.stringify(info));
  return { tiled, info };
}
const ready = setup();

let sessions = { key: '', graphs: {}, failed: {} };
/**
 * onnxruntime-web sessions for both graphs of ./onnx.mjs (the fused MultiHeadAttention and
 * MatMul-Softmax-MatMul): both are timed and the faster one is the peer's figure. A graph this
 * build cannot load is recorded with its error, not fatal, unless neither loads.
 */
async function ortSessions(L, d, causal) {
  const key = `${L}/${d}/${causal}`;
  if (sessions.key !== key) {
    for (const g of Object.values(sessions.graphs)) await g.session.release();
    sessions = { key, graphs: {}, failed: {} };
    const opts = { executionProviders: ['wasm'], graphOptimizationLevel: 'all', executionMode: 'sequential', intraOpNumThreads: 1, interOpNumThreads: 1 };
    for (const kind of ['mha', 'msm']) {
      const m = attentionModel(kind, L, d, causal);
      try {
        sessions.graphs[kind] = { session: await ort.InferenceSession.create(m.bytes, opts), dims: m.inputDims };
      } catch (e) {
        sessions.failed[kind] = String(e?.message ?? e);
      }
    }
    if (Object.keys(sessions.graphs).length === 0) throw new Error(`onnxruntime-web could not load either graph: ${JSON.stringify(sessions.failed)}`);
  }
  return sessions;
}

/** The calls for one shape; each maps fresh { Q, K, V } to the output Float32Array (L * d). */
async function runners(L, d, causal) {
  const { tiled } = await ready;
  const o = await ortSessions(L, d, causal);
  const bias = causal ? tf.keep(tf.tidy(() => tf.mul(tf.sub(tf.linalg.bandPart(tf.ones([L, L]), -1, 0), 1), 1e30))) : null;
  const scale = 1 / Math.sqrt(d);
  const ortCall = ({ session, dims }) => async ({ Q, K, V }) => {
    const out = await session.run({
      query: new ort.Tensor('float32', Q, dims), key: new ort.Tensor('float32', K, dims), value: new ort.Tensor('float32', V, dims),
    });
    const data = out.output.data;
    out.output.dispose?.();
    return data;
  };
  return {
    ortFailed: o.failed,
    dispose: () => bias?.dispose(),
    calls: {
      qkscope: ({ Q, K, V }) => tiled.attention({
        query: { rows: L, cols: d, data: Q }, key: { rows: L, cols: d, data: K }, value: { rows: L, cols: d, data: V }, causal,
      }).output.data,
      ...Object.fromEntries(Object.entries(o.graphs).map(([kind, g]) => [`ort_${kind}`, ortCall(g)])),
      tfjs: ({ Q, K, V }) => {
        const y = tf.tidy(() => {
          const q = tf.tensor2d(Q, [L, d]), k = tf.tensor2d(K, [L, d]), v = tf.tensor2d(V, [L, d]);
          // Its fastest form: matMul(q, k, false, true) takes ~10x longer in tfjs-backend-wasm 4.22
          // than an explicit transpose (measured at L = 512), and scaling Q is L d multiplies, not L^2.
          let s = tf.matMul(tf.mul(q, scale), tf.transpose(k));
          if (bias) s = tf.add(s, bias); // -1e30 above the diagonal: exp underflows to exactly 0
          return tf.matMul(tf.softmax(s), v);
        });
        const data = y.dataSync();
        y.dispose();
        return data;
      },
    },
  };
}

function maxAbsDiff(a, b) {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const x = Math.abs(a[i] - b[i]);
    if (!(x <= m)) m = Number.isNaN(x) ? Infinity : x;
  }
  return m;
}

let seed = 1;
const fresh = (L, d) => ({ Q: normals(L * d, seed++), K: normals(L * d, seed++), V: normals(L * d, seed++) });

/**
 * One shape: validate (the three outputs on the same inputs, pairwise max |difference|), then
 * `warmup` untimed rounds and `repeats` timed rounds, the three interleaved within each round
 * so that load from other processes falls on all alike. Times in ms.
 */
async function runCase({ L, d = 64, causal = false, warmup = 2, repeats = 10 }) {
  const r = await runners(L, d, causal);
  const names = Object.keys(r.calls);
  try {
    const x = fresh(L, d);
    const outs = {};
    for (const n of names) outs[n] = Float32Array.from(await r.calls[n](x));
    let maxOut = 0;
    for (const v of outs.qkscope) maxOut = Math.max(maxOut, Math.abs(v));
    const diffs = {};
    names.forEach((a, i) => names.slice(i + 1).forEach((b) => (diffs[`${a}:${b}`] = maxAbsDiff(outs[a], outs[b]))));
    const samples = Object.fromEntries(names.map((n) => [n, []]));
    for (let round = 0; round < warmup + repeats; round++)
      for (const n of names) {
        const input = fresh(L, d);
        const t0 = performance.now();
        await r.calls[n](input);
        const ms = performance.now() - t0;
        if (round >= warmup) samples[n].push(ms);
      }
    return { L, d, causal, ortFailed: r.ortFailed, maxAbsOutput: maxOut, diffs, samples };
  } finally {
    r.dispose();
  }
}

window.qkBench = { ready: ready.then((x) => x.info), runCase };
