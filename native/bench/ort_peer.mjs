// ort_peer.mjs — the ONNX Runtime peer of native/bench/peers.py (onnxruntime-node, CPU, MLAS).
// A worker: reads one JSON request per line on stdin, answers one JSON line on stdout.
//   request  { model, kind: "mha"|"msm", heads, len, dim, k, head0?: { q, k, v, out } }
//   answer   { ms: [k timings of session.run], version, provider } or { error }
// One intra-op and one inter-op thread, sequential execution, all graph optimisations.
// head0 (optional): raw float32 (len, dim) row-major files of head 0's Q, K, V; they are placed
// in head 0 of the inputs (other heads: seeded normal noise) and head 0 of the first output is
// written to head0.out, so peers.py can validate the timed session before its timings count.
import { createInterface } from 'node:readline';
import { readFileSync, writeFileSync } from 'node:fs';
import ort from 'onnxruntime-node';
import { normals } from '../../web/bench-web/normals.mjs';

/** Index of element (row, col) of head h in the model's input layout. */
const at = (kind, H, L, d) => (h, row, col) => (kind === 'mha' ? row * H * d + h * d + col : (h * L + row) * d + col);

let cached = { key: '', session: null };

async function handle(req) {
  const { kind, heads: H, len: L, dim: d } = req;
  if (cached.key !== req.model) {
    await cached.session?.release();
    cached = {
      key: req.model,
      session: await ort.InferenceSession.create(req.model, {
        intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential',
        graphOptimizationLevel: 'all', executionProviders: ['cpu'],
      }),
    };
  }
  const session = cached.session;
  const dims = kind === 'mha' ? [1, L, H * d] : [1, H, L, d];
  const idx = at(kind, H, L, d);
  const feeds = {};
  ['query', 'key', 'value'].forEach((name, n) => {
    const data = normals(H * L * d, 17 + n);
    if (req.head0) {
      const src = new Float32Array(readFileSync(req.head0[['q', 'k', 'v'][n]]).buffer.slice(0));
      if (src.length !== L * d) throw new Error(`head0.${['q', 'k', 'v'][n]}: ${src.length} floats, expected ${L * d}`);
      for (let r = 0; r < L; ++r) for (let c = 0; c < d; ++c) data[idx(0, r, c)] = src[r * d + c];
    }
    feeds[name] = new ort.Tensor('float32', data, dims);
  });
  let out = (await session.run(feeds)).output; // warm, and the output to validate
  if (req.head0) {
    const o = new Float32Array(L * d);
    for (let r = 0; r < L; ++r) for (let c = 0; c < d; ++c) o[r * d + c] = out.data[idx(0, r, c)];
    writeFileSync(req.head0.out, Buffer.from(o.buffer));
  }
  out = null;
  const ms = [];
  for (let i = 0; i < req.k; ++i) {
    const t0 = performance.now();
    await session.run(feeds);
    ms.push(performance.now() - t0);
  }
  return { ms, version: ort.env.versions?.node ?? 'unknown' };
}

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  let answer;
  try {
    answer = await handle(JSON.parse(line));
  } catch (e) {
    answer = { error: String(e?.message ?? e) };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
}
await cached.session?.release();
