// web/bench-web/normals.mjs — the benchmarks' reproducible inputs, without a dependency: shared
// by the bench:web page (page.mjs), the wasm A/B page (native/bench/wasm_ab_web.mjs) and the
// ONNX Runtime peer of peers.py (native/bench/ort_peer.mjs, in Node).
/** Seeded N(0, 1) entries (xorshift32 + Box-Muller), `n` of them. */
export function normals(n, seed) {
  let s = seed >>> 0 || 1;
  const u = () => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return (s + 0.5) / 4294967296;
  };
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const r = Math.sqrt(-2 * Math.log(u())), t = 2 * Math.PI * u();
    out[i] = r * Math.cos(t);
    if (i + 1 < n) out[i + 1] = r * Math.sin(t);
  }
  return out;
}
