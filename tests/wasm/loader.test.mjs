// loadQkScope(): Node needs wasmBinary, one shared instance, frozen registries.
// Order matters in this file (the loader memoises per process): keep the first test first.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';

import { loadQkScope, tiledWasmUrl, wasmUrl } from './helpers.mjs';

test('in Node, loading without wasmBinary rejects with a hint, and is not memoised', async () => {
  await assert.rejects(loadQkScope(), /wasmBinary/);
  await assert.rejects(loadQkScope({}), /wasmBinary/);
});

test('concurrent calls share one instance; later calls too', async () => {
  const bytes = await readFile(wasmUrl);
  const [a, b] = await Promise.all([loadQkScope({ wasmBinary: bytes }), loadQkScope({ wasmBinary: bytes.buffer })]);
  assert.equal(a, b);
  assert.equal(await loadQkScope(), a, 'options are not needed once loaded');
});

test('the API object implements the QkScope interface and is frozen', async () => {
  const qk = await loadQkScope();
  for (const f of ['forward', 'backward', 'initParams']) assert.equal(typeof qk[f], 'function', f);
  assert.equal(typeof qk.version, 'string');
  assert.ok(Array.isArray(qk.scoreFunctions) && qk.scoreFunctions.length > 0);
  assert.ok(Array.isArray(qk.normalizers) && qk.normalizers.length > 0);
  assert.ok(Object.isFrozen(qk));
  assert.ok(Object.isFrozen(qk.scoreFunctions) && Object.isFrozen(qk.scoreFunctions[0].params));
  assert.throws(() => { qk.scoreFunctions[0].name = 'x'; }, TypeError);
});

test('missing arguments reach C++ and get its messages (not Embind arity errors)', async () => {
  const qk = await loadQkScope();
  assert.throws(() => qk.forward(), { name: 'RangeError', message: /^options must be an object/ });
  assert.throws(() => qk.initParams('bilinear'), { name: 'RangeError', message: /^dQ must be a number, got undefined/ });
  // hidden and seed may be omitted from JS: hidden = d_k, seed = 0.
  assert.deepEqual(qk.initParams('additive', 2, 3), qk.initParams('additive', 2, 3, 3, 0));
});

test('the tiled module: in Node without its bytes the fast calls reject with a hint, not memoised', async () => {
  const qk = await loadQkScope();  // loaded above without tiledWasmBinary
  const X = [[1, 0], [0, 1]];
  await assert.rejects(qk.attention({ query: X, key: X, value: X }), /tiledWasmBinary/);
  await assert.rejects(qk.tiled(), /tiledWasmBinary/);
  const tiled = await qk.tiled({ wasmBinary: await readFile(tiledWasmUrl) });
  assert.equal(await qk.tiled(), tiled, 'loaded once, then shared');
  assert.ok(Object.isFrozen(tiled) && Object.isFrozen(tiled.scoreFunctions));
  const a = await qk.attention({ query: X, key: X, value: X });
  assert.equal(a.tiled, true);
  const f = qk.forward({ query: X, key: X, value: X }).output.data;
  a.output.data.forEach((x, k) => assert.ok(Math.abs(x - f[k]) <= 1e-6, `output[${k}]: ${x} vs forward ${f[k]}`));
});
