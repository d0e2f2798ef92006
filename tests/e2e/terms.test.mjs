// tests/e2e/terms.test.mjs — the Chinese catalogs use one term per concept (the glossary
// of docs/facts.md): 独热 (one-hot), 温度系数 (temperature), top-k, 有效支撑集大小
// (effective support e^H), 加性 without the misleading "concat", 被屏蔽 for masked, 并列 for
// a tie, 几乎处处可微. Static: reads the sources.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { repoRoot } from './server.mjs';

const FORBIDDEN = [
  [/one-hot/, '独热'],
  [/Top-K/, 'top-k'],
  [/温度(?!系数)/, '温度系数'],
  [/有效键数|有效支撑(?!集大小)/, '有效支撑集大小'],
  [/加性（concat）/, '加性（Bahdanau）'],
  [/看点/, '观察要点'],
  [/去除这些/, '除以'],
  [/被掩码|已掩码|完全掩码/, '被屏蔽 / 已屏蔽 / 整行被屏蔽 (the mask itself stays 掩码)'],
  [/平局/, '并列 (a tie)'],
  [/几乎处处可导/, '几乎处处可微'],
];

async function zhCatalogs() {
  const dir = join(repoRoot, 'web/src/chapters');
  const files = [join(repoRoot, 'web/src/i18n/zh.ts')];
  for (const d of await readdir(dir, { withFileTypes: true })) if (d.isDirectory()) files.push(join(dir, d.name, 'zh.ts'));
  const out = [];
  for (const f of files) {
    try {
      out.push([f, await readFile(f, 'utf8')]);
    } catch {
      // folders without a catalog (shared/)
    }
  }
  return out;
}

test('Chinese catalogs: one term per concept', async () => {
  const found = [];
  for (const [file, text] of await zhCatalogs()) {
    // Only the strings: comments (English, for developers) may name the English term.
    const strings = text.split('\n').filter((l) => !/^\s*(\/\/|\*|\/\*\*)/.test(l)).join('\n');
    for (const [re, use] of FORBIDDEN) {
      const m = strings.match(re);
      if (m) found.push(`${file.slice(repoRoot.length)}: "${m[0]}" (use ${use})`);
    }
  }
  assert.deepEqual(found, []);
});

test('English figure captions start with a capital letter (they follow "What to notice.")', async () => {
  const dir = join(repoRoot, 'web/src/chapters');
  const found = [];
  for (const d of await readdir(dir, { withFileTypes: true })) {
    if (!d.isDirectory()) continue;
    let text;
    try {
      text = await readFile(join(dir, d.name, 'en.ts'), 'utf8');
    } catch {
      continue;
    }
    for (const m of text.matchAll(/caption: (?:r`|')([^`']{0,30})/g)) if (/^[a-z]/.test(m[1])) found.push(`${d.name}: ${m[1]}`);
  }
  assert.deepEqual(found, []);
});
