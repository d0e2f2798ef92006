// tests/e2e/widget.test.mjs — the self-contained <qk-scope> script (dist/widget/qk-scope.js)
// on a plain static page served WITHOUT Vite, by a tiny node:http server with the minimal
// Content-Security-Policy that web/widget.html documents (default-src 'none'; script-src
// 'self' 'wasm-unsafe-eval'; style-src 'self'), in headless Chromium. Three widgets
// (tests/e2e/fixtures/widget/index.html): the worked example, a step-by-step causal one in
// Chinese, and one with a bad attribute. Needs `npm run build:widget` first.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { launchChromium, loadCore, repoRoot, serveFiles } from './server.mjs';

const FIXTURE = join(repoRoot, 'tests/e2e/fixtures/widget');
const SCRIPT = join(repoRoot, 'dist/widget/qk-scope.js');
/** The minimal policy of web/widget.html, exactly: anything the widget needed beyond it would be a violation here. */
const CSP = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'";

let server;
let origin;
let browser;

before(async () => {
  if (!existsSync(SCRIPT)) throw new Error('dist/widget/qk-scope.js is missing: run `npm run build:widget` first');
  server = await serveFiles((path) => (path === '/favicon.ico' ? { status: 204 }
    : path === '/qk-scope.js' ? SCRIPT : join(FIXTURE, path === '/' ? '/index.html' : path)), { headers: { 'content-security-policy': CSP } });
  origin = server.origin;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** Opens the fixture; collects console errors, page errors, CSP violations, foreign requests, wasm instantiations. */
async function open({ colorScheme = 'light' } = {}) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 900 }, colorScheme });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(`console.error: ${m.text()}`));
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('request', (r) => !r.url().startsWith(origin) && problems.push(`foreign request: ${r.url()}`));
  page.on('response', (r) => r.status() >= 400 && problems.push(`HTTP ${r.status()}: ${r.url()}`));
  await page.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(`${e.violatedDirective}: ${e.blockedURI}`));
    window.__events = [];
    document.addEventListener('attention-change', (e) => window.__events.push({ id: e.target.id, detail: e.detail }));
    window.__instances = 0;
    for (const name of ['instantiate', 'instantiateStreaming']) {
      const orig = WebAssembly[name];
      WebAssembly[name] = function (...args) {
        window.__instances++;
        return orig.apply(this, args);
      };
    }
  });
  await page.goto(origin + '/');
  await page.waitForFunction(() => ['worked', 'steps', 'bad'].every((id) => window.__events.some((e) => e.id === id)), null, { timeout: 20000 });
  const finish = async () => {
    const csp = await page.evaluate(() => window.__csp);
    await context.close();
    assert.deepEqual(csp, [], `CSP violations:\n${csp.join('\n')}`);
    assert.deepEqual(problems, [], `console or page errors:\n${problems.join('\n')}`);
  };
  return { page, finish };
}

/** Cell texts of one grid in a widget's shadow root, as rows. */
function gridRows(page, id, matrix = 'weights') {
  return page.evaluate(([id, matrix]) => {
    const grid = document.getElementById(id).shadowRoot.querySelector(`[role=grid][data-matrix="${matrix}"]`);
    if (!grid) return null;
    return [...grid.querySelectorAll('[role=row]')].map((r) => [...r.querySelectorAll('[role=gridcell]')].map((c) => c.textContent));
  }, [id, matrix]);
}

const lastEvent = (page, id) => page.evaluate((id) => window.__events.filter((e) => e.id === id).at(-1)?.detail, id);

test('three widgets render under a strict CSP, offline, sharing one wasm instance, with no errors', async () => {
  const { page, finish } = await open();
  const counts = await page.evaluate(() =>
    ['worked', 'steps', 'bad'].map((id) => document.getElementById(id).shadowRoot.querySelectorAll('[role=grid]').length));
  const qk = await loadCore();
  assert.deepEqual(counts, [1, 4, qk.scoreFunctions.length], 'heatmap: 1 grid, steps: 4, compare: one per scoring function');
  assert.equal(await page.evaluate(() => window.__instances), 1, 'one WebAssembly instance for three widgets');
  assert.equal(await page.evaluate(() => customElements.get('qk-scope') !== undefined), true);
  await finish();
});

test('worked example: scaled_dot weights row 1 is 0.5065 0.1863 0.3072, and the event carries them', async () => {
  const { page, finish } = await open();
  const rows = await gridRows(page, 'worked');
  assert.deepEqual(rows[0], ['0.5065', '0.1863', '0.3072']);
  const d = await lastEvent(page, 'worked');
  assert.equal(d.config.score, 'scaled_dot');
  assert.deepEqual(d.weights[0].map((x) => x.toFixed(4)), ['0.5065', '0.1863', '0.3072']);
  assert.equal(d.argmax[0], 0);
  assert.ok(Math.abs(d.scale - 0.5) < 1e-6, 'scale 1/sqrt(4)');
  await finish();
});

test("setAttribute('score', 'additive') recomputes, updates the control and fires attention-change", async () => {
  const { page, finish } = await open();
  const before = await gridRows(page, 'worked');
  const n = await page.evaluate(() => window.__events.length);
  await page.evaluate(() => document.getElementById('worked').setAttribute('score', 'additive'));
  await page.waitForFunction((n) => window.__events.length > n, n);
  const after = await gridRows(page, 'worked');
  assert.notDeepEqual(after, before, 'weights changed');
  const d = await lastEvent(page, 'worked');
  assert.equal(d.config.score, 'additive');
  const sel = await page.evaluate(() => document.getElementById('worked').shadowRoot.querySelector('select[data-control=score]').value);
  assert.equal(sel, 'additive');
  // A control writes its attribute back (attributes are the source of truth).
  await page.evaluate(() => {
    const s = document.getElementById('worked').shadowRoot.querySelector('select[data-control=mask]');
    s.value = 'causal';
    s.dispatchEvent(new Event('change'));
  });
  await page.waitForFunction(() => window.__events.at(-1).detail.config.mask === 'causal');
  assert.equal(await page.evaluate(() => document.getElementById('worked').getAttribute('mask')), 'causal');
  const masked = await page.evaluate(() => document.getElementById('worked').shadowRoot.querySelectorAll('[role=gridcell][data-masked=true]').length);
  assert.equal(masked, 3, 'causal 3 x 3: three masked cells above the diagonal');
  await finish();
});

test('a bad attribute shows a polite message and falls back; fixing it clears the message', async () => {
  const { page, finish } = await open();
  const msg = await page.evaluate(() => {
    const s = document.getElementById('bad').shadowRoot.querySelector('[part~=error][role=status]');
    return { text: s.textContent, live: s.getAttribute('aria-live') };
  });
  assert.match(msg.text, /temperature="-1" is not valid/);
  assert.match(msg.text, /using 1/);
  assert.equal(msg.live, 'polite');
  assert.equal((await lastEvent(page, 'bad')).config.temperature, 1);
  await page.evaluate(() => document.getElementById('bad').setAttribute('temperature', '0.5'));
  await page.waitForFunction(() => window.__events.at(-1).detail.config.temperature === 0.5);
  const text = await page.evaluate(() => document.getElementById('bad').shadowRoot.querySelector('[role=status]').textContent);
  assert.equal(text, '');
  await page.evaluate(() => document.getElementById('bad').setAttribute('q', '[[1,2],[3]]'));
  await page.waitForFunction(() => /q="\[\[1,2\],\[3\]\]" is not valid/.test(document.getElementById('bad').shadowRoot.querySelector('[role=status]').textContent));
  await finish();
});

test('steps view: causal bottom-right mask, Chinese labels, four grids', async () => {
  const { page, finish } = await open();
  const info = await page.evaluate(() => {
    const r = document.getElementById('steps').shadowRoot;
    return {
      masked: r.querySelectorAll('[data-matrix=weights] [data-masked=true]').length,
      caption: r.querySelector('figcaption').textContent,
      controls: [...r.querySelectorAll('label.control')].filter((l) => !l.hidden).map((l) => l.querySelector('[data-control]').dataset.control),
    };
  });
  // lq=4, lk=5, bottom-right: query i sees keys j <= i + 1 -> masked 3+2+1+0 = 6.
  assert.equal(info.masked, 6);
  assert.match(info.caption, /原始分数/);
  assert.deepEqual(info.controls, ['score', 'mask', 'view']);
  await finish();
});

test('keyboard: Tab reaches the controls and the grid, arrow keys move between cells', async () => {
  const { page, finish } = await open();
  await page.evaluate(() => document.activeElement?.blur());
  await page.keyboard.press('Tab');
  const focus = () => page.evaluate(() => {
    const host = document.activeElement;
    const inner = host?.shadowRoot?.activeElement;
    return { host: host?.id, tag: inner?.tagName, control: inner?.dataset?.control, i: inner?.dataset?.i, j: inner?.dataset?.j };
  });
  assert.deepEqual(await focus(), { host: 'worked', tag: 'SELECT', control: 'score', i: undefined, j: undefined });
  await page.keyboard.press('Tab'); // temperature slider
  assert.equal((await focus()).control, 'temperature-slider');
  await page.keyboard.press('Tab'); // temperature value
  await page.keyboard.press('Tab'); // mask
  await page.keyboard.press('Tab'); // first cell of the grid
  assert.deepEqual(await focus(), { host: 'worked', tag: 'DIV', control: undefined, i: '0', j: '0' });
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowDown');
  const f = await focus();
  assert.deepEqual([f.i, f.j], ['1', '1']);
  const label = await page.evaluate(() => document.getElementById('worked').shadowRoot.activeElement.getAttribute('aria-label'));
  assert.match(label, /row 2, column 2: 0\.\d{4}/);
  await finish();
});

test('dark colour scheme applies the dark custom properties', async () => {
  const { page, finish } = await open({ colorScheme: 'dark' });
  const bg = await page.evaluate(() => getComputedStyle(document.getElementById('worked')).backgroundColor);
  assert.equal(bg, 'rgb(13, 17, 23)');
  await finish();
});

test('hostile attributes (markup, megabyte strings, deep JSON, huge numbers) are rejected or clamped, never markup', async () => {
  const { page, finish } = await open();
  const evil = '<img src=x onerror="window.__pwned=1">';
  const cases = [
    ['q', evil], ['score', evil], ['lang', evil], ['controls', evil], ['view', evil], ['mask', evil],
    ['q', 'x'.repeat(1 << 20)], ['q', '['.repeat(50000) + ']'.repeat(50000)], ['q', '[[1e39, 1]]'],
    ['q', `[[${'1,'.repeat(5000)}1]]`], ['temperature', '1e39'], ['temperature', 'Infinity'], ['lq', '1e99'], ['d', '99999999'], ['seed', '-5'],
  ];
  for (const [name, value] of cases) {
    const before = await page.evaluate(() => window.__events.length);
    await page.evaluate(([n, v]) => document.getElementById('bad').setAttribute(n, v), [name, value]);
    await page.waitForFunction((b) => window.__events.length > b, before, { timeout: 10000 });
    const state = await page.evaluate(() => {
      const root = document.getElementById('bad').shadowRoot;
      return {
        markup: document.querySelectorAll('img, iframe, [onerror]').length + root.querySelectorAll('img, iframe, [onerror]').length,
        pwned: window.__pwned ?? null,
        status: root.querySelector('[role=status]').textContent,
      };
    });
    assert.equal(state.markup, 0, `${name}: no element created from the attribute`);
    assert.equal(state.pwned, null);
    // The status lists one message per invalid attribute (they accumulate here): each echoes
    // at most a short prefix of the value, whatever its size.
    const ev = await lastEvent(page, 'bad');
    assert.ok(ev.problems.length >= 1 && ev.problems.every((m) => m.length < 200),
      `${name}: every message echoes at most a short prefix (${ev.problems.map((m) => m.length)} chars)`);
    assert.ok(state.status.length < 200 * ev.problems.length, `${name}: the status is those messages (${state.status.length} chars)`);
    const w = ev.weights;
    assert.ok(w.flat().every(Number.isFinite), `${name}: finite weights after the fallback`);
  }
  const text = await page.evaluate(() => document.getElementById('bad').shadowRoot.querySelector('[role=status]').textContent);
  assert.match(text, /is not valid/);
  await finish();
});

/** Sets attributes on a widget and waits for its next attention-change; returns its detail. */
async function setAttrs(page, id, attrs) {
  const before = await page.evaluate(() => window.__events.length);
  await page.evaluate(([id, attrs]) => {
    const w = document.getElementById(id);
    for (const [k, v] of Object.entries(attrs)) w.setAttribute(k, v);
  }, [id, attrs]);
  await page.waitForFunction((b) => window.__events.length > b, before);
  return lastEvent(page, id);
}

/** Cells whose printed number is wider than the cell, in every grid of a widget. */
const overflowingCells = (page, id) => page.evaluate((id) =>
  [...document.getElementById(id).shadowRoot.querySelectorAll('[role=gridcell]')]
    .filter((c) => c.scrollWidth > c.clientWidth)
    .map((c) => `${c.closest('[role=grid]').dataset.matrix} (${c.dataset.i},${c.dataset.j}) "${c.textContent}"`), id);

test('digits: numbers fit their cells in the step view, whatever their size; digits sets the decimals', async () => {
  const { page, finish } = await open();
  // Scores in the thousands (unscaled dot product of large vectors) and small weights.
  const big = { view: 'steps', score: 'dot', mask: 'none', q: '[[120,-85,33],[7.5,0.25,-64],[-99,12,5]]', k: '[[-70,44,9],[15,-3,88],[1,1,1],[60,-60,2]]', v: '[[1,2,3],[4,5,6],[7,8,9],[-1,-2,-3]]' };
  await setAttrs(page, 'steps', big);
  assert.deepEqual(await overflowingCells(page, 'steps'), [], 'automatic decimals');
  const raw = await gridRows(page, 'steps', 'raw');
  assert.ok(raw.flat().some((t) => t.replace('\u2212', '-').replace('.', '').length >= 5), `large scores are printed: ${raw}`);
  await setAttrs(page, 'steps', { digits: '6' });
  assert.deepEqual(await overflowingCells(page, 'steps'), [], 'digits="6": the columns widen');
  assert.match((await gridRows(page, 'steps', 'raw'))[0][0], /^\u2212?\d+\.\d{6}$/);
  // The worked example with two decimals; a bad value falls back to automatic and says so.
  await setAttrs(page, 'worked', { digits: '2' });
  assert.deepEqual((await gridRows(page, 'worked'))[0], ['0.51', '0.19', '0.31']);
  const d = await setAttrs(page, 'worked', { digits: '9' });
  assert.deepEqual((await gridRows(page, 'worked'))[0], ['0.5065', '0.1863', '0.3072']);
  assert.ok(d.problems.some((m) => /digits="9" is not valid .*0\.\.6.*using auto/.test(m)), d.problems.join('\n'));
  await finish();
});

test('axes and legends: query and key titles with indices, a legend title per matrix, in the widget\'s language', async () => {
  const { page, finish } = await open();
  const axes = (id) => page.evaluate((id) => [...document.getElementById(id).shadowRoot.querySelectorAll('figure.matrix')].map((f) => ({
    x: f.querySelector('.axis-x').textContent,
    y: f.querySelector('.axis-y').textContent,
    ticksX: [...f.querySelectorAll('.ticks-x span')].map((s) => s.textContent).join(' '),
    ticksY: [...f.querySelectorAll('.ticks-y span')].map((s) => s.textContent).join(' '),
    legend: f.querySelector('.legend-title').textContent,
  })), id);
  assert.deepEqual(await axes('worked'), [{ x: 'key', y: 'query', ticksX: '1 2 3', ticksY: '1 2 3', legend: 'weight' }]);
  const zh = await axes('steps');
  assert.deepEqual(zh.map((a) => [a.x, a.y, a.legend]), [['键', '查询', '分数'], ['键', '查询', '分数'], ['键', '查询', '权重'], ['维', '查询', '数值']]);
  assert.deepEqual(zh.map((a) => a.ticksY), ['1 2 3 4', '1 2 3 4', '1 2 3 4', '1 2 3 4']);
  assert.equal(zh[0].ticksX, '1 2 3 4 5');
  // The tick numbers line up with the cells.
  const aligned = await page.evaluate(() => {
    const f = document.getElementById('worked').shadowRoot.querySelector('figure.matrix');
    const cx = (e) => { const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; };
    const cells = [...f.querySelectorAll('[role=row]')[0].children].map(cx);
    const rows = [...f.querySelectorAll('[role=row]')].map((r) => cx(r.children[0]));
    return {
      x: [...f.querySelectorAll('.ticks-x span')].map((s, j) => Math.abs(cx(s)[0] - cells[j][0])),
      y: [...f.querySelectorAll('.ticks-y span')].map((s, i) => Math.abs(cx(s)[1] - rows[i][1])),
    };
  });
  assert.ok([...aligned.x, ...aligned.y].every((d) => d < 2), `ticks centred on their columns and rows: ${JSON.stringify(aligned)}`);
  await finish();
});

test('lang="zh": every option name, step title and compared function is in Chinese', async () => {
  const qk = await loadCore();
  const { page, finish } = await open();
  // Names the Chinese text keeps in Latin letters (as the tutorial's glossary does).
  const TERMS = new Set(['softmax', 'Gumbel-softmax', 'sparsemax', 'top-k softmax']);
  const english = new Set([...qk.scoreFunctions.map((f) => f.label), ...qk.normalizers.map((n) => n.label)]);
  const options = await page.evaluate(() =>
    [...document.getElementById('steps').shadowRoot.querySelectorAll('select')].flatMap((s) => [...s.options].map((o) => `${s.dataset.control}: ${o.textContent}`)));
  assert.ok(options.length >= qk.scoreFunctions.length + qk.normalizers.length + 6, `all selects are built: ${options.length}`);
  const untranslated = options.filter((o) => {
    const text = o.slice(o.indexOf(': ') + 2);
    return !/[\u4e00-\u9fff]/.test(text) && !TERMS.has(text);
  });
  assert.deepEqual(untranslated, []);
  assert.ok(options.every((o) => !english.has(o.slice(o.indexOf(': ') + 2)) || TERMS.has(o.slice(o.indexOf(': ') + 2))), 'no core (English) label');
  await setAttrs(page, 'steps', { normalizer: 'sparsemax' });
  const titles = await page.evaluate(() => [...document.getElementById('steps').shadowRoot.querySelectorAll('figcaption')].map((f) => f.textContent));
  assert.equal(titles[2], '3. 权重 = sparsemax', 'the weights step names the normalizer in use');
  await setAttrs(page, 'bad', { lang: 'zh' });
  const compared = await page.evaluate(() => [...document.getElementById('bad').shadowRoot.querySelectorAll('figcaption')].map((f) => f.textContent));
  assert.equal(compared.length, qk.scoreFunctions.length);
  assert.ok(compared.every((t) => /[\u4e00-\u9fff]/.test(t)), `compare view in Chinese: ${compared}`);
  await finish();
});

test('temperature slider: log scale over 0.05..20, keyboard operable, writes the attribute and recomputes', async () => {
  const { page, finish } = await open();
  const slider = () => page.evaluate(() => {
    const r = document.getElementById('worked').shadowRoot.querySelector('input[type=range]');
    return { value: Number(r.value), min: Number(r.min), max: Number(r.max), text: r.getAttribute('aria-valuetext'), name: r.closest('label').firstChild.textContent, box: r.parentElement.querySelector('input[type=number]').value };
  });
  const s0 = await slider();
  assert.equal(s0.name, 'Temperature τ', 'the label names the slider');
  assert.ok(Math.abs(10 ** s0.min - 0.05) < 1e-3 && Math.abs(10 ** s0.max - 20) < 0.1, `range 0.05..20: ${s0.min}..${s0.max}`);
  assert.equal(s0.value, 0);
  assert.equal(s0.text, 'τ = 1');
  const before = await page.evaluate(() => window.__events.length);
  await page.evaluate(() => document.getElementById('worked').shadowRoot.querySelector('input[type=range]').focus());
  await page.keyboard.press('End');
  await page.waitForFunction((b) => window.__events.length > b && window.__events.at(-1).detail.config.temperature === 20, before);
  assert.equal(await page.evaluate(() => document.getElementById('worked').getAttribute('temperature')), '20');
  const flat = (await lastEvent(page, 'worked')).weights[0];
  assert.ok(Math.max(...flat) - Math.min(...flat) < 0.02, `tau = 20 flattens row 1: ${flat}`);
  assert.equal((await slider()).box, '20', 'the number box follows');
  await page.keyboard.press('Home');
  await page.waitForFunction(() => window.__events.at(-1).detail.config.temperature === 0.0501);
  assert.ok((await lastEvent(page, 'worked')).weights[0][0] > 0.999, 'tau = 0.05: nearly one-hot');
  // An attribute outside the slider's range puts the slider at its end and keeps the value.
  await page.evaluate(() => document.activeElement.blur());
  await setAttrs(page, 'worked', { temperature: '0.01' });
  const s1 = await slider();
  assert.equal(s1.value, s1.min);
  assert.equal(s1.text, 'τ = 0.01');
  assert.equal(s1.box, '0.01');
  await finish();
});
