// tests/bench/peers-deps.test.mjs — bench:peers on a machine without its optional Debian
// packages (python3-torch brings NumPy): `python3 -S` hides every site package, so the script
// must stop with its install hint and exit 3, not with a Python traceback.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const peers = fileURLToPath(new URL('../../native/bench/peers.py', import.meta.url));

test('bench:peers without PyTorch or NumPy: the apt-get hint and exit 3, no traceback', () => {
  const p = spawnSync('/usr/bin/python3', ['-S', peers, '--quick'], { encoding: 'utf8' });
  assert.equal(p.status, 3, p.stderr);
  assert.match(p.stderr, /PyTorch is not installed .*\n\s+apt-get install -y python3-torch/);
  assert.doesNotMatch(p.stderr, /Traceback/);
});
