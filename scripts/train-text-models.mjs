// train-text-models.mjs — `npm run train:text-models`: trains the shipped next-character
// models, one per registered scoring function (`--score all`: the core's registry), on
// "The Devil's Dictionary" (scripts/devil-text.mjs) with the native driver qkscope_train
// (bench preset), fixed seed and steps, and writes web/public/train-models/devil-<score>.json
// (format in docs/training.md). The same build gives the same files byte for byte
// (one thread, seeded; other CPUs or compilers may differ in the last bits).
//   QKSCOPE_DEVIL_DICT=/path/devil.dict.dz npm run train:text-models   (a copy elsewhere)
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { devilText } from './devil-text.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'web/public/train-models');
const textFile = join(root, 'build/text/devil.txt');
const driver = join(root, 'build/bench/native/train/qkscope_train');

/** The shipped models' settings (docs/training.md, "Shipped models"). */
export const textModelFlags = [
  '--task', 'text', '--mask', 'causal', '--len', '32', '--width', '24', '--heads', '2', '--layers', '2',
  '--batch', '32', '--steps', '1500', '--lr', '0.01', '--seed', '1', '--eval-size', '65536',
];

mkdirSync(dirname(textFile), { recursive: true });
mkdirSync(outDir, { recursive: true });
writeFileSync(textFile, devilText());
const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
run('cmake', ['--preset', 'bench']);
run('cmake', ['--build', '--preset', 'bench', '--target', 'qkscope_train', '--parallel', '2']);
const flags = [...textModelFlags, '--eval-every', textModelFlags[textModelFlags.indexOf('--steps') + 1]];
// The package's path, not devilDictPath: an override points at a copy of the same file.
const source = "Ambrose Bierce, The Devil's Dictionary (1911), public domain (copyright expired); " +
  'Debian package dict-devil, /usr/share/dictd/devil.dict.dz';
run(driver, [...flags, '--text', textFile, '--text-name', source, '--score', 'all',
  '--save-model', join(outDir, 'devil-{score}.json')]);

