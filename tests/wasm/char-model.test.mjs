// The shipped next-character models (web/public/train-models/devil-<score>.json, written by
// `npm run train:text-models`) and loadCharModel of the training module (CharModel in
// wasm/types/train.d.ts): one file per registered scoring function, each under its size
// budget; the wasm forward (the core's model_forward) reproduces the held-out loss the
// native trainer recorded; edge-case texts; hostile files rejected with the field named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

import { load } from './helpers.mjs';
import { devilText } from '../../scripts/devil-text.mjs';

const trainWasmUrl = new URL('../../wasm/dist/qkscope_train.wasm', import.meta.url);
const modelsUrl = new URL('../../web/public/train-models/', import.meta.url);
/** Per file, as served (JSON, base64 float32 parameters): shipped with the page. */
const budget = 60_000;

const qk = await load();
const tr = await qk.train({ wasmBinary: await readFile(trainWasmUrl) });
const scores = qk.scoreFunctions.map((s) => s.name);
const fileOf = (score) => new URL(`devil-${score}.json`, modelsUrl);
const weightsOf = (score) => JSON.parse(readFileSync(fileOf(score), 'utf8'));

test('every registered scoring function has a weights file, and no file lacks a scoring function', () => {
  const files = readdirSync(modelsUrl).filter((f) => f.endsWith('.json')).sort();
  assert.deepEqual(files, scores.map((s) => `devil-${s}.json`).sort());
});

for (const score of scores) {
  test(`devil-${score}.json is at most ${budget / 1000} KB`, () => {
    const size = statSync(fileOf(score)).size;
    console.log(`# devil-${score}.json: ${size} B`);
    assert.ok(size <= budget, `${size} B`);
  });
}

// Native: the bench build (-O3 -march=native, FMA) evaluates all windows in one batch;
// here each window runs alone in wasm SIMD128. Both are float32; the order of the
// additions inside the GEMMs differs (measured on the mean: 5e-10 to 2e-9 relative, x86-64
// AVX-512 GCC -O3 vs Emscripten 3.1.6 SIMD128). 1e-5 leaves room for other CPUs and compilers;
// an accuracy may differ where two characters tie to float32 precision: 1e-3 absolute.
const lossTol = 1e-5, accTol = 1e-3;
const corpus = tr.encodeText(devilText());

for (const score of scores) {
  test(`${score}: the wasm forward reproduces the recorded held-out loss (relative ${lossTol}) and beats the unigram baseline`, () => {
    const w = weightsOf(score);
    const m = tr.loadCharModel(w);
    try {
      assert.deepEqual([m.score, m.vocabulary, m.context, m.layers, m.heads, m.width],
        [score, w.vocabulary, w.context, w.layers, w.heads, w.width]);
      const h = w.heldout;
      assert.equal(corpus.length, h.characters, 'the encoded text has the length the trainer saw');
      const L = w.context;
      let loss = 0, correct = 0, n = 0;
      for (let k = 0; k < h.windows; ++k) {
        const s = h.start + k * L;
        const p = m.predict(corpus.slice(s, s + L));
        assert.equal(p.text, corpus.slice(s, s + L));
        for (let i = 0; i < L; ++i) {
          const row = p.next.data.subarray(i * p.next.cols, (i + 1) * p.next.cols);
          const y = w.vocabulary.indexOf(corpus[s + i + 1]);
          loss -= Math.log(row[y]);
          let best = 0;
          for (let c = 1; c < row.length; ++c) if (row[c] > row[best]) best = c;
          correct += best === y;
          ++n;
        }
      }
      loss /= n;
      const rel = Math.abs(loss - h.loss) / h.loss;
      console.log(`# ${score}: held-out loss wasm ${loss.toFixed(6)} native ${h.loss.toFixed(6)} (relative ${rel.toExponential(2)}), ` +
        `accuracy ${(correct / n).toFixed(4)} (unigram ${h.unigram_accuracy.toFixed(4)})`);
      assert.ok(rel <= lossTol, `${score}: ${loss} vs ${h.loss}`);
      assert.ok(Math.abs(correct / n - h.accuracy) <= accTol, `${correct / n} vs ${h.accuracy}`);
      assert.ok(h.accuracy > h.unigram_accuracy + 0.1 && h.loss < h.unigram_loss - 0.3, JSON.stringify(h));
    } finally {
      m.delete();
    }
  });
}

test('predict: a sentence, empty text, long text, unknown characters', () => {
  const m = tr.loadCharModel(weightsOf('scaled_dot'));
  try {
    const V = m.vocabulary.length;
    const p = m.predict('The Devil\'s Dictionary: a cynic\'s word book');
    const n = p.text.length;
    assert.equal(p.text, 'the devil\'s dictionary: a cynic\'s word book'.slice(-m.context));
    assert.deepEqual([p.next.rows, p.next.cols], [n, V]);
    for (let i = 0; i < n; ++i) {
      const sum = p.next.data.subarray(i * V, (i + 1) * V).reduce((a, b) => a + b, 0);
      assert.ok(Math.abs(sum - 1) < 1e-5, `row ${i} sums to ${sum}`);
    }
    for (let l = 0; l < m.layers; ++l)
      for (let hd = 0; hd < m.heads; ++hd) {
        const a = p.attention(l, hd);
        assert.deepEqual([a.rows, a.cols], [n, n]);
        for (let i = 0; i < n; ++i) {
          const row = a.data.subarray(i * n, (i + 1) * n);
          assert.ok(Math.abs(row.reduce((x, y) => x + y, 0) - 1) < 1e-5);
          for (let j = i + 1; j < n; ++j) assert.equal(row[j], 0, `causal: (${i}, ${j})`);
        }
      }
    // "the devil'" is followed by "s" in the book: the model ranks it first or second.
    const q = m.predict('the devil');
    const last = q.next.data.subarray((q.next.rows - 1) * V);
    const order = [...last.keys()].sort((a, b) => last[b] - last[a]);
    assert.ok(order.indexOf(m.vocabulary.indexOf('\'')) < 3 || order.indexOf(m.vocabulary.indexOf(' ')) < 3);
    const e = m.predict('');
    assert.deepEqual([e.text, e.next.rows, e.next.cols, e.attention(0, 0).rows], ['', 0, V, 0]);
    assert.equal(m.encode(''), '');
    const long = 'abc '.repeat(40) + 'END';
    assert.equal(m.encode(long), ('abc '.repeat(40) + 'end').slice(-m.context));
    assert.equal(m.predict(long).text.length, m.context);
    assert.equal(m.encode('Zürich 1911\t\n_x_'), 'z#rich #### #x#');
    assert.throws(() => p.attention(m.layers, 0), (err) => err instanceof RangeError &&
      err.message.includes(`layer must be an integer in [0, ${m.layers}), got ${m.layers}`));
    assert.throws(() => p.attention(0, 1.5), (err) => err instanceof RangeError && /head/.test(err.message));
    assert.throws(() => m.predict(42), (err) => err instanceof RangeError && /text must be a string, got the number 42/.test(err.message));
  } finally {
    m.delete();
  }
});

test('hostile weights files are rejected with the field named; the module stays usable', () => {
  const good = weightsOf('additive');
  const bad = (edit, re) => {
    const w = structuredClone(good);
    edit(w);
    assert.throws(() => tr.loadCharModel(w), (e) => e instanceof RangeError && re.test(e.message), re.source);
  };
  const tensor = (name) => new Float32Array(new Uint8Array(Buffer.from(good.params[name].data, 'base64')).buffer);
  const b64 = (f32) => Buffer.from(f32.buffer).toString('base64');
  assert.throws(() => tr.loadCharModel(null), (e) => e instanceof RangeError && /weights must be an object/.test(e.message));
  bad((w) => { w.format = 'onnx'; }, /weights\.format must be 'qkscope-char-model', got 'onnx'/);
  bad((w) => { delete w.format; }, /weights\.format is missing/);
  bad((w) => { w.version = 2; }, /weights\.version must be 1, got 2/);
  bad((w) => { w.task = 'reverse'; }, /weights\.task must be 'text'/);
  bad((w) => { w.score = 'dott'; }, /weights\.score: .*unknown scoring function 'dott'/);
  bad((w) => { w.normalizer = 'soft'; }, /weights\.normalizer: .*unknown normalizer 'soft'/);
  bad((w) => { w.mask = 'none'; }, /weights\.mask must be 'causal'/);
  bad((w) => { w.vocabulary = 'abc'; }, /weights\.vocabulary must be/);
  bad((w) => { w.context = 0; }, /weights\.context/);
  bad((w) => { w.context = 'many'; }, /weights\.context/);
  const d = good.width, V = good.vocabulary.length, esc = (x) => x.replace(/[[\]().]/g, '\\$&');
  bad((w) => { w.heads = 5; }, new RegExp(esc(`width (${d}) must be a multiple of heads (5)`)));
  bad((w) => { w.layers = good.layers + 1; }, new RegExp(esc(`weights.params["layers[${good.layers}].W_Q"] must be an object`)));
  bad((w) => { w.params = []; }, /weights\.params must be an object of tensors/);
  bad((w) => { delete w.params.E; }, /weights\.params\["E"\] must be an object \{shape, data\}, got undefined/);
  bad((w) => { w.params.E.shape = [d, V]; }, new RegExp(esc(`weights.params["E"].shape must be [${V}, ${d}], got [${d}, ${V}]`)));
  bad((w) => { w.params.E.shape = [1e9, -1, 2]; }, new RegExp(esc(`weights.params["E"].shape must be [${V}, ${d}], got [1000000000, -1, 2]`)));
  bad((w) => { w.params.E.shape = [String(V), d]; }, /shape must be .*, got an array whose entry 0 is a string/);
  bad((w) => { w.params.E.shape = new Array(1e6).fill(1); }, /shape must be .*, got an array of 1000000 entries/);
  // A 100 MB string is rejected by its length, before it is copied into the heap (took seconds).
  const t0 = performance.now();
  bad((w) => { w.params.E.data = 'A'.repeat(100_000_000); }, /weights\.params\["E"\]\.data must be \d+ base64 characters \(\d+ float32 values\), got 100000000/);
  assert.ok(performance.now() - t0 < 1500, `${performance.now() - t0} ms`);
  bad((w) => { w.params.b_out.shape = [V, 1]; }, new RegExp(esc(`weights.params["b_out"].shape must be [${V}]`)));
  bad((w) => { w.params.E.data = w.params.E.data.slice(0, -8); }, /weights\.params\["E"\]\.data must be \d+ base64 characters/);
  bad((w) => { w.params.E.data = '!' + w.params.E.data.slice(1); }, /weights\.params\["E"\]\.data is not base64: character 0 is '!'/);
  bad((w) => { w.params.E.data = 7; }, /weights\.params\["E"\]\.data must be a base64 string/);
  bad((w) => { const t = tensor('W_out'); t[5] = NaN; w.params.W_out.data = b64(t); }, /weights\.params\["W_out"\]\.data\[5\] must be finite, got NaN/);
  bad((w) => { const t = tensor('P'); t[0] = Infinity; w.params.P.data = b64(t); }, /weights\.params\["P"\]\.data\[0\] must be finite, got Infinity/);
  bad((w) => { w.params.Z = w.params.E; }, /weights\.params has an unknown tensor 'Z'/);
  const m = tr.loadCharModel(good);
  try {
    assert.equal(m.predict('abc').next.rows, 3);
  } finally {
    m.delete();
  }
});
