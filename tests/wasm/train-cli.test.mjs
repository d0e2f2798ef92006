// The native training driver's command line (native/train/, `npm run train`; built by
// `npm run test:cpp`): hostile arguments end with exit status 2 and one message naming the
// flag, never an abort or a table of nan; a run that diverges at its first step shows '-'
// for its loss and time; output paths are checked before any training.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const nativeUrl = new URL('../../build/native/native/train/qkscope_train', import.meta.url);

function run(...args) {
  assert.ok(existsSync(nativeUrl), `${nativeUrl.pathname} missing: run \`npm run test:cpp\` first (it builds qkscope_train)`);
  const r = spawnSync(nativeUrl.pathname, args, { encoding: 'utf8', timeout: 60000 });
  return { status: r.status, signal: r.signal, out: r.stdout, err: r.stderr };
}

test('hostile arguments: exit status 2 and a message naming the flag', () => {
  const dir = mkdtempSync(join(tmpdir(), 'qktrain-cli-'));
  try {
    const empty = join(dir, 'empty.txt');
    writeFileSync(empty, '');
    const cases = [
      [['--steps', '0'], /--steps must be in \[1, 10000000\], got 0/],
      [['--lr', 'nan'], /lr \(learning rate\) must be finite and > 0, got nan/],
      [['--lr', '-1'], /lr \(learning rate\) must be finite and > 0, got -1/],
      [['--task', 'sort'], /unknown task 'sort'/],
      [['--score', 'dott'], /unknown scoring function 'dott'/],
      [['--score', 'dot,dot'], /--score lists 'dot' twice/],
      [['--heads', '3'], /width \(32\) must be a multiple of heads \(3\)/],
      [['--layers', '0'], /--layers must be in \[1, 4\], got 0/],
      [['--layers', '99'], /--layers must be in \[1, 4\], got 99/],
      [['--len', '1'], /task 'reverse' needs sequence length >= 2, got 1/],
      [['--task', 'text', '--mask', 'causal', '--text', join(dir, 'missing.txt')], /--text: cannot read/],
      [['--task', 'text', '--mask', 'causal', '--text', empty], /needs a text of at least 140 characters/],
      [['--task', 'text', '--mask', 'causal', '--text', dir], /--text: '.*' is a directory, not a text file/],
      [['--seed', String(2 ** 53)], /--seed must be in \[0, 9007199254740991\]/],
      // The last argument an unknown flag: named as unknown, not as missing its value.
      [['--bogus'], /unknown flag '--bogus'/],
      // Memory is bounded before anything is allocated (a bad_alloc aborted the driver).
      [['--len', '4096', '--batch', '4096'], /batch \(4096\) x heads \(1\) x layers \(1\) x length\^2 \(4096\^2\) attention weights must be at most 67108864/],
      [['--len', '1024'], /eval_size \(256\) x heads \(1\) x layers \(1\) x length\^2 \(1024\^2\) attention weights must be at most/],
      // Output paths fail before the training, not after it.
      [['--json', join(dir, 'no', 'such', 'dir.json')], /cannot write --json/],
      [['--save-model', join(dir, 'no', '{score}.json')], /cannot write --save-model .*scaled_dot\.json/],
    ];
    for (const [args, re] of cases) {
      const r = run(...args, '--steps', args.includes('--steps') ? args[args.indexOf('--steps') + 1] : '2');
      assert.equal(r.signal, null, `${args.join(' ')}: killed by ${r.signal}`);
      assert.equal(r.status, 2, `${args.join(' ')}: exit ${r.status}\n${r.err}`);
      assert.match(r.err, re, args.join(' '));
      assert.match(r.err, /^qkscope_train: error: .* \(see --help\)\n$/, `${args.join(' ')}: one message line`);
      assert.doesNotMatch(r.out, /score +steps to 95%/, `${args.join(' ')}: no table after an error`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a run that diverges at its first step is reported, with - for its loss and time, never nan', () => {
  const r = run('--lr', '1e300', '--steps', '3');
  assert.equal(r.status, 0, r.err);
  const row = r.out.split('\n').find((l) => l.startsWith('scaled_dot '));
  assert.match(row, /^scaled_dot +- +- +0\.\d{3} +0\.\d{3} +- +DIVERGED$/);
  assert.doesNotMatch(r.out, /nan/i);
  assert.match(r.out, /scaled_dot: training diverged at step 1: a parameter became non-finite after the update \(learning rate or weight decay too large\?\)/);
  // The same stop from the weight decay alone (the message named only the learning rate).
  const wd = run('--weight-decay', '1e300', '--steps', '3');
  assert.match(wd.out, /DIVERGED/);
  assert.match(wd.out, /learning rate or weight decay too large/);
});
