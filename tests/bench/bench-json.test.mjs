// tests/bench/bench-json.test.mjs — qkscope_bench's --json output and its CLI polish, on a tiny
// run of the test build (build/native, built by test:cpp; built here if missing): the JSON
// matches native/bench/bench-json.schema.json, --progress draws a bar on stderr, a pipe gets
// none, and stdout ends with the one-line summary; bad arguments are refused before the run.
// Also checks the benchmark page's default data set (a qkscope-peers file) against the schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validate } from './schema-check.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const bench = join(root, 'build/native/native/bench/qkscope_bench');
const schema = JSON.parse(readFileSync(join(root, 'native/bench/bench-json.schema.json'), 'utf8'));
const TINY = ['--threads', '1', '--heads', '2', '--len', '24', '--dim', '8', '--repeats', '3', '--causal', '1'];

function runTiny(extra) {
  if (!existsSync(bench)) {
    if (!existsSync(join(root, 'build/native/CMakeCache.txt'))) execFileSync('cmake', ['--preset', 'native'], { cwd: root });
    execFileSync('cmake', ['--build', '--preset', 'native', '--target', 'qkscope_bench', '--parallel', '2'], { cwd: root });
  }
  const dir = mkdtempSync(join(tmpdir(), 'qkscope-bench-'));
  try {
    const file = join(dir, 'out.json');
    const p = spawnSync(bench, [...TINY, '--json', file, ...extra], { encoding: 'utf8' });
    assert.equal(p.status, 0, p.stderr);
    return { json: JSON.parse(readFileSync(file, 'utf8')), stdout: p.stdout, stderr: p.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the JSON of a tiny run has every required field of schema qkscope-bench v1, with the right types', () => {
  const { json } = runTiny([]);
  assert.deepEqual(validate(json, schema.$defs.bench, schema), []);
  assert.equal(json.schema, 'qkscope-bench');
  assert.equal(json.version, 1);
  assert.equal(json.len, 24);
  assert.equal(json.causal, true);
  assert.equal(json.tiled_samples_ms.length, 3);
  // The schema check itself can fail: a run without a required field is rejected.
  const { gemm_gflops: _, ...broken } = json;
  assert.match(validate(broken, schema.$defs.bench, schema).join('\n'), /gemm_gflops/);
});

test('no progress bar on a pipe; --progress draws one on stderr; stdout ends with the summary', () => {
  const plain = runTiny([]);
  assert.doesNotMatch(plain.stderr, /\r/, 'no carriage returns when stderr is not a terminal');
  const forced = runTiny(['--progress']);
  assert.match(forced.stderr, /\r\[3\/5\] timing \[#{30}\] 3\/3/);
  const last = forced.stdout.trim().split('\n').at(-1);
  assert.match(last, /^summary: scaled_dot B=1 H=2 L=24 d=8 causal fwd, 1 thread\(s\): [\d.e+-]+ ms, [\d.e+-]+ GFLOP\/s \(\d+% of GEMM\), validated max_abs [\d.e+-]+, peak RSS [\d.]+ MB, load /);
});

test('the benchmark page default data set is a valid qkscope-peers file', () => {
  const data = JSON.parse(readFileSync(join(root, 'web/src/bench-view/default-peers.json'), 'utf8'));
  assert.deepEqual(validate(data, schema.$defs.peers, schema), []);
  assert.ok(data.rows.some((r) => r.ort_ms > 0), 'the ONNX Runtime peer is in the published figures');
});

test('bad arguments: a one-line message naming the flag and exit 2, before any timing', () => {
  runTiny([]); // builds the binary when missing
  for (const [args, why] of [
    [['--preset', 'nope'], /unknown preset 'nope'/],
    [['--len', '-5'], /--len must be >= 1, got -5/],
    [['--len', 'abc'], /--len expects an integer, got 'abc'/],
    [['--len', '99999999999999999999'], /--len is out of range/],
    [['--threads', '99999999999'], /--threads must be <= 4096/],
    [['--score', 'bogus'], /unknown score 'bogus'/],
    [['--json'], /incomplete option '--json'/],
    [[...TINY, '--json', '/nonexistent-dir/x.json'], /cannot write --json \/nonexistent-dir\/x\.json/],
    [[...TINY, '--csv', '/nonexistent-dir/x.csv'], /cannot write --csv/],
  ]) {
    const p = spawnSync(bench, args, { encoding: 'utf8' });
    assert.equal(p.status, 2, `${args.join(' ')}: ${p.stderr}`);
    assert.match(p.stderr, why);
    assert.doesNotMatch(p.stderr, /\[1\/5\]/, `${args.join(' ')}: refused before the run starts`);
  }
});
