// The registries reach JS and the TypeScript types say the same: the unions ScoreName,
// NormalizerName and NormalizerOptionName of wasm/qkscope.d.ts must list exactly what the
// module reports from the C++ type lists, every score parameter must be a ScoreParams key
// and every normalizer option a ForwardOptions key. A scoring function or normalizer
// registered in the core but missing from the types fails here.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { before, describe, test } from 'node:test';

import { X, load } from './helpers.mjs';

// The declarations: wasm/qkscope.d.ts and the files it re-exports (wasm/types/).
const dts = (
  await Promise.all(
    ['qkscope.d.ts', 'types/core.d.ts', 'types/attention.d.ts', 'types/extras.d.ts'].map((f) =>
      readFile(new URL(`../../wasm/${f}`, import.meta.url), 'utf8'),
    ),
  )
).join('\n');

/** The string literals of `export type <name> = 'a' | 'b' ...;` in the d.ts text. */
function unionOf(name) {
  const m = dts.match(new RegExp(`export type ${name}\\s*=([^;]*);`));
  assert.ok(m, `wasm/qkscope.d.ts declares type ${name}`);
  const body = m[1].replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
  const names = [...body.matchAll(/'([^']*)'/g)].map((x) => x[1]);
  assert.equal(body.replace(/'[^']*'|\|/g, '').trim(), '', `${name} is a union of string literals only`);
  return names;
}

/** The member names of `export interface <name> { ... }` (top level only). */
function keysOf(name) {
  const start = dts.search(new RegExp(`export interface ${name}\\b[^{]*\\{`));
  assert.ok(start >= 0, `wasm/qkscope.d.ts declares interface ${name}`);
  let depth = 0, i = dts.indexOf('{', start), body = '';
  for (; i < dts.length; i++) {
    const c = dts[i];
    if (c === '{') depth++;
    if (c === '}' && --depth === 0) break;
    if (depth === 1 && c !== '{') body += c;
    else if (depth > 1) body += ' ';
  }
  body = body.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  return [...body.matchAll(/^\s*(?:readonly\s+)?([A-Za-z_$][\w$]*)\??\s*[:(]/gm)].map((x) => x[1]);
}

const sorted = (a) => [...a].sort();

describe('registries vs wasm/qkscope.d.ts', () => {
  let qk;
  before(async () => {
    qk = await load();
  });

  test('ScoreName lists exactly the registered scoring functions', () => {
    assert.deepEqual(sorted(unionOf('ScoreName')), sorted(qk.scoreFunctions.map((s) => s.name)));
  });

  test('NormalizerName lists exactly the registered normalizers', () => {
    assert.deepEqual(sorted(unionOf('NormalizerName')), sorted(qk.normalizers.map((n) => n.name)));
  });

  test('NormalizerOptionName lists exactly the registered normalizer options, each a ForwardOptions key', () => {
    const reported = [...new Set(qk.normalizers.flatMap((n) => n.options.map((o) => o.name)))];
    assert.deepEqual(sorted(unionOf('NormalizerOptionName')), sorted(reported));
    const forwardKeys = keysOf('ForwardOptions');
    for (const o of reported) assert.ok(forwardKeys.includes(o), `ForwardOptions documents '${o}'`);
  });

  test('every score parameter is a ScoreParams key', () => {
    const keys = keysOf('ScoreParams');
    for (const s of qk.scoreFunctions)
      for (const p of s.params) assert.ok(keys.includes(p), `ScoreParams documents '${p}' (${s.name})`);
  });

  test('each registry entry has the fields its interface declares', () => {
    for (const s of qk.scoreFunctions) assert.deepEqual(sorted(Object.keys(s)), sorted(keysOf('ScoreInfo')), s.name);
    for (const n of qk.normalizers) {
      assert.deepEqual(sorted(Object.keys(n)), sorted(keysOf('NormalizerInfo')), n.name);
      for (const o of n.options) {
        for (const k of Object.keys(o)) assert.ok(keysOf('NormalizerOptionInfo').includes(k), `${n.name}.${o.name}.${k}`);
        assert.ok(['boolean', 'integer', 'number'].includes(o.kind), `${o.name}.kind`);
        assert.equal(typeof o.default, o.kind === 'boolean' ? 'boolean' : 'number', `${o.name}.default`);
      }
    }
  });
});

describe('normalizer options come from the registry', () => {
  let qk;
  before(async () => {
    qk = await load();
  });

  test('topk_softmax reads topK (integer >= 1, default 1); gumbel_softmax reads seed and hard', () => {
    const byName = Object.fromEntries(qk.normalizers.map((n) => [n.name, n.options]));
    assert.deepEqual(byName.topk_softmax.map((o) => [o.name, o.kind, o.default, o.min]), [['topK', 'integer', 1, 1]]);
    assert.deepEqual(byName.gumbel_softmax.map((o) => [o.name, o.kind, o.default]),
      [['seed', 'integer', 0], ['hard', 'boolean', false]]);
    for (const n of ['softmax', 'hard', 'sparsemax']) assert.deepEqual(byName[n], [], n);
  });

  test('each option is read by forward(), its range checked as documented', () => {
    for (const n of qk.normalizers) {
      for (const o of n.options) {
        const base = { query: X, key: X, value: X, score: 'dot', normalizer: n.name };
        const value = o.kind === 'boolean' ? !o.default : o.default + 1;
        assert.doesNotThrow(() => qk.forward({ ...base, [o.name]: value }), `${n.name}: ${o.name} = ${value}`);
        if (o.kind !== 'boolean')
          assert.throws(() => qk.forward({ ...base, [o.name]: o.min - 1 }), (e) => e instanceof RangeError &&
            e.message.startsWith(`${o.name} must be`), `${n.name}: ${o.name} below its minimum`);
        else
          assert.throws(() => qk.forward({ ...base, [o.name]: 1 }), (e) => e instanceof RangeError &&
            e.message.startsWith(`${o.name} must be a boolean`), `${n.name}: ${o.name} not a boolean`);
      }
    }
  });

  test('an option changes the weights of its own normalizer only', () => {
    const base = { query: X, key: X, value: X, score: 'dot', scale: 2 };
    const k1 = qk.forward({ ...base, normalizer: 'topk_softmax', topK: 1 }).weights.data;
    const k2 = qk.forward({ ...base, normalizer: 'topk_softmax', topK: 2 }).weights.data;
    assert.notDeepEqual(Array.from(k1), Array.from(k2));
    const s1 = qk.forward({ ...base, normalizer: 'softmax', topK: 1 }).weights.data;
    const s2 = qk.forward({ ...base, normalizer: 'softmax', topK: 2 }).weights.data;
    assert.deepEqual(Array.from(s1), Array.from(s2));
  });
});
