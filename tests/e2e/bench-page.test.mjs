// tests/e2e/bench-page.test.mjs — web/bench.html (benchmark results): the default data set
// (web/src/bench-view/default-peers.json, the published figures) renders with its machine and
// load; a file named in the URL (?data=, same origin), a dropped file and a picked file each
// replace it; a bad file (broken JSON, wrong types, non-positive values, a newer version) leaves
// the view unchanged and says why; markup in the file stays text; CSV export has the series.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { launchChromium, repoRoot, startPreview } from './server.mjs';

const published = JSON.parse(readFileSync(`${repoRoot}web/src/bench-view/default-peers.json`, 'utf8'));
const mine = {
  schema: 'qkscope-peers', version: 1, cpu: 'Test CPU 9000', cores: 4, load_start: '0.10 0.20 0.30', load_end: '0.40 0.50 0.60',
  rounds: 1, repeats: 3,
  rows: [512, 1024, 2048].map((L, i) => ({
    case: `scaled_dot B=1 H=1 L=${L} d=64`, score: 'scaled_dot', len: L, dim: 64, heads: 1, causal: false,
    qkscope_ms: 1 + i, pytorch_ms: 3 + i, pytorch_tuned_ms: 2 + i, ratio: 2, ratio_tuned: 1.5,
    qkscope_gflops: 50 + i, pytorch_gflops: 20, pytorch_tuned_gflops: 30, eigen_gemm_gflops: 80, torch_gemm_gflops: 90, load: '0.4',
  })),
};
const pointsOf = (d) => d.rows.reduce((n, r) => n + ['qkscope_ms', 'pytorch_ms', 'pytorch_tuned_ms', 'ort_ms'].filter((k) => typeof r[k] === 'number').length, 0);

let server;
let browser;
before(async () => {
  server = await startPreview();
  browser = await launchChromium();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

async function open(query = '', route) {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 }, acceptDownloads: true });
  const problems = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && problems.push(`console.error: ${m.text()}`));
  if (route) await page.route('**/runs/mine.json', (r) => r.fulfill({ contentType: 'application/json', body: JSON.stringify(route) }));
  await page.goto(`${server.url}bench.html${query}`);
  await page.waitForFunction(() => document.body.dataset.loaded, null, { timeout: 20000 });
  return { page, problems };
}

const state = (page) => page.evaluate(() => ({
  loaded: document.body.dataset.loaded,
  machine: document.querySelector('[data-testid=bench-machines]').textContent,
  rows: document.querySelectorAll('[data-testid=bench-table] tbody tr').length,
  lines: [...document.querySelectorAll('[data-testid=bench-gflops] svg path')].filter((p) => p.getAttribute('class')?.includes('line')).length,
  marks: document.querySelectorAll('[data-testid=bench-gflops] svg .point').length,
  error: document.querySelector('[data-testid=bench-error]').hidden ? null : document.querySelector('[data-testid=bench-error]').textContent,
}));

test('the published figures render by default, with machine and load', async () => {
  const { page, problems } = await open();
  const s = await state(page);
  assert.match(s.loaded, /published/);
  assert.ok(s.machine.includes(published.cpu), 'machine shown');
  assert.ok(s.machine.includes(published.load_start), 'load shown');
  assert.equal(s.rows, pointsOf(published));
  assert.ok(s.marks >= 8, `GFLOP/s chart has points (${s.marks})`);
  assert.match(await page.textContent('[data-testid=bench-gflops]'), /ONNX Runtime/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('?data= loads a same-origin file that replaces the default', async () => {
  const { page, problems } = await open('?data=runs/mine.json', mine);
  await page.waitForFunction(() => document.body.dataset.loaded === 'runs/mine.json');
  const s = await state(page);
  assert.match(s.machine, /Test CPU 9000, 4 cores/);
  assert.match(s.machine, /0\.10 0\.20 0\.30 at the start, 0\.40 0\.50 0\.60 at the end/);
  assert.equal(s.rows, 9);
  assert.equal(s.marks, 9, 'three implementations x three lengths');
  assert.deepEqual(problems, []);
  await page.close();
});

test('a dropped file replaces the view; a bad file leaves it and says why; the CSV export has the series', async () => {
  const { page, problems } = await open();
  const drop = (text, name) => page.evaluate(([text, name]) => {
    const dt = new DataTransfer();
    dt.items.add(new File([text], name, { type: 'application/json' }));
    document.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, [text, name]);
  await drop(JSON.stringify(mine), 'dropped.json');
  await page.waitForFunction(() => document.body.dataset.loaded === 'dropped.json');
  assert.equal((await state(page)).rows, 9);
  await drop(JSON.stringify({ schema: 'something-else', version: 1 }), 'bad.json');
  await page.waitForSelector('[data-testid=bench-error]:not([hidden])');
  const s = await state(page);
  assert.match(s.error, /bad\.json: not a qkscope benchmark file/);
  assert.equal(s.loaded, 'dropped.json', 'the view is unchanged');
  await drop(JSON.stringify({ ...mine, version: 2 }), 'future.json');
  await page.waitForFunction(() => /version 2 is newer/.test(document.querySelector('[data-testid=bench-error]').textContent));
  // Hostile or broken files: each is refused with a message naming the file and the field.
  for (const [name, file, why] of [
    ['truncated.json', '{"schema":"qkscope-peers","version":1,"rows":[', /truncated\.json is not JSON/],
    ['nullrow.json', JSON.stringify({ ...mine, rows: [null] }), /nullrow\.json: rows\[0\]: expected an object/],
    ['strver.json', JSON.stringify({ ...mine, version: '2' }), /strver\.json: "version" must be a number/],
    ['negms.json', JSON.stringify({ ...mine, rows: mine.rows.map((r) => ({ ...r, qkscope_ms: -1 })) }), /negms\.json: rows\[0\]: "qkscope_ms" must be a time > 0/],
    ['huge.json', JSON.stringify({ ...mine, rows: Array.from({ length: 100000 }, (_, i) => ({ ...mine.rows[0], len: 512 + i })) }), /huge\.json: 100000 rows, more than this page draws/],
    ['zerolen.json', JSON.stringify({ ...mine, rows: mine.rows.map((r) => ({ ...r, len: 0 })) }), /zerolen\.json: rows\[0\]: no sequence length/],
  ]) {
    await drop(file, name);
    await page.waitForFunction((n) => document.querySelector('[data-testid=bench-error]').textContent.includes(n), name);
    assert.match((await state(page)).error, why);
    assert.equal((await state(page)).loaded, 'dropped.json', `${name}: the view is unchanged`);
  }
  // Markup in machine names and case labels is shown as text, never parsed.
  const evil = '<img src=x onerror="document.title=1"><b>bold</b>';
  await drop(JSON.stringify({ ...mine, cpu: evil, rows: mine.rows.map((r) => ({ ...r, case: r.case + evil })) }), 'markup.json');
  await page.waitForFunction(() => document.body.dataset.loaded === 'markup.json');
  assert.ok((await state(page)).machine.includes(evil), 'the machine name is shown literally');
  assert.equal(await page.evaluate(() => document.querySelectorAll('main img, main b').length), 0, 'no element from the file');
  // The file picker takes the same path.
  await page.setInputFiles('[data-testid=bench-file]', { name: 'picked.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(mine)) });
  await page.waitForFunction(() => document.body.dataset.loaded === 'picked.json');
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.evaluate(() => {
      const fig = document.querySelector('[data-testid=figure-bench-gflops]');
      fig.querySelector('[data-testid=export]').click();
      fig.querySelector('[data-testid=export-csv]').click();
    }),
  ]);
  const csv = readFileSync(await download.path(), 'utf8');
  assert.match(csv, /^series,L,gflops\r\n/);
  assert.match(csv, /qkscope \(tiled\),1024,51\r\n/);
  assert.deepEqual(problems, []);
  await page.close();
});
