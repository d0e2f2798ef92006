/**
 * bench.html: benchmark results as charts. Shows the figures published in the README and
 * native/bench/NOTES.md (default-peers.json) until the reader loads their own files: drop
 * JSON files on the page, pick them, or name same-origin files in the URL
 * (?data=runs/a.json&data=runs/b.json). Files follow docs/bench-json.md. Each figure
 * exports PNG / SVG / CSV / JSON through the tutorial's figure frame.
 */
import '../base.css';
import './bench.css';
import { catalog } from '../i18n';
import { FigureFrame } from '../chapters/shared/figure';
import { h, testId } from '../chapters/shared/dom';
import { LineChart } from '../charts/line';
import { seriesTable } from '../charts/export';
import { type Dataset, parseDataset, seriesOf } from './data';
import defaultPeers from './default-peers.json';

const cat = catalog('en');
const L_TICKS = [256, 512, 1024, 2048, 4096, 8192, 16384];
const DEFAULT_SOURCE = 'published figures (default-peers.json)';

const status = testId(h('p', { className: 'bench-status' }), 'bench-status');
status.setAttribute('role', 'status');
const error = testId(h('p', { className: 'bench-error', hidden: true }), 'bench-error');
error.setAttribute('role', 'alert');
const machines = testId(h('div', { className: 'bench-machines' }), 'bench-machines');
const table = testId(h('table', { className: 'bench-table' }), 'bench-table');
// A long list on a phone: folded by default, the charts come first.
const tableSummary = h('summary');
const tableBox = h('details', { className: 'bench-details' }, tableSummary, table);

let sets: Dataset[] = [];

function chartFigure(measure: 'gflops' | 'ms') {
  const gf = measure === 'gflops';
  const chart = new LineChart(gf ? 'bench-gflops' : 'bench-time', 900);
  const yLabel = gf ? 'GFLOP/s (higher is faster)' : 'time per head, ms (lower is faster)';
  const frame = new FigureFrame(cat, {
    id: gf ? 'figure-bench-gflops' : 'figure-bench-time',
    title: gf ? 'Throughput against sequence length' : 'Time per head against sequence length',
    caption: gf
      ? 'Scaled-dot attention, forward, fp32, one thread, no mask. Each line is one implementation; rows with the same L are averaged.'
      : 'The same runs as time per attention head (a run over H heads divided by H), on log axes: quadratic cost is a slope of 2.',
    onReset: () => void loadDefault(),
    charts: () => [{ title: yLabel, parts: chart.parts() }],
    data: () => seriesTable(seriesOf(sets, measure).map((s) => ({ id: s.label, points: s.points })), 'L', gf ? 'gflops' : 'ms_per_head'),
  });
  frame.body.append(chart.el);
  const draw = () => {
    const series = seriesOf(sets, measure);
    const xs = series.flatMap((s) => s.points.map((p) => p.x));
    const xDomain: [number, number] | undefined = xs.length ? [Math.min(...xs) / 1.25, Math.max(...xs) * 1.25] : undefined;
    chart.update({
      label: `${yLabel} against L`,
      x: { label: 'sequence length L (L_q = L_k)', scale: 'log', domain: xDomain, ticks: L_TICKS.filter((t) => series.some((s) => s.points.some((p) => p.x >= t / 1.5 && p.x <= t * 1.5))) },
      y: gf ? { label: 'GFLOP/s', domain: [0, null] } : { label: 'ms per head', scale: 'log' },
      series: series.map((s, k) => ({ id: s.id, label: s.label, color: k % 7, points: s.points.map(({ x, y }) => ({ x, y })) })),
      pointLabel: (s, p) => `${s.label}: L = ${p.x}, ${gf ? `${p.y.toFixed(1)} GFLOP/s` : `${p.y.toPrecision(3)} ms per head`}`,
    });
  };
  return { frame, draw };
}

const figures = [chartFigure('gflops'), chartFigure('ms')];

function renderMachines(): void {
  machines.replaceChildren(
    ...sets.map((s) => {
      const m = s.machine;
      const d = testId(h('dl', { className: 'bench-machine' }), 'bench-machine');
      const row = (k: string, v: string) => d.append(h('dt', { textContent: k }), h('dd', { textContent: v }));
      row('file', s.source);
      row('machine', `${m.cpu}${m.cores ? `, ${m.cores} cores` : ''}`);
      row('load average', m.loadEnd && m.loadEnd !== m.loadStart ? `${m.loadStart} at the start, ${m.loadEnd} at the end` : m.loadStart || 'not recorded');
      if (m.date) row('date', m.date);
      row('setup', s.setup);
      return d;
    }),
  );
}

function renderTable(): void {
  const many = sets.length > 1;  // the file column only when there is a choice
  const cols = [...(many ? ['file'] : []), 'configuration', 'implementation', 'ms', 'GFLOP/s'];
  const head = h('tr', {}, ...cols.map((t) => h('th', { scope: 'col', textContent: t })));
  const body = h('tbody');
  for (const s of sets)
    for (const p of s.points)
      body.append(h('tr', {},
        ...(many ? [h('td', { textContent: s.source })] : []), h('td', { textContent: p.label }), h('td', { textContent: p.impl }),
        h('td', { className: 'num', textContent: p.ms.toFixed(2) }),
        h('td', { className: 'num', textContent: p.gflops === null ? '-' : p.gflops.toFixed(1) })));
  table.replaceChildren(h('thead', {}, head), body);
  tableSummary.textContent = `Every measurement in the loaded files (${body.rows.length} medians)`;
}

function show(next: Dataset[], note: string): void {
  sets = next;
  error.hidden = true;
  status.textContent = note;
  renderMachines();
  for (const f of figures) f.draw();
  renderTable();
  document.body.dataset.loaded = sets.map((s) => s.source).join('|');
}

function fail(message: string): void {
  error.textContent = `Not loaded: ${message}. The figures shown are unchanged.`;
  error.hidden = false;
}

async function loadDefault(): Promise<void> {
  show([parseDataset(JSON.stringify(defaultPeers), DEFAULT_SOURCE)], 'Showing the published run (README and native/bench/NOTES.md, third pass: ONNX Runtime peer).');
}

/** Loads (text, name) pairs; all or nothing, so a bad file never leaves a half-replaced view. */
function loadTexts(files: { text: string; name: string }[], how: string): void {
  try {
    const parsed = files.map((f) => parseDataset(f.text, f.name));
    show(parsed, `Showing ${parsed.length} file${parsed.length > 1 ? 's' : ''} (${how}).`);
  } catch (e) {
    fail(e instanceof Error ? e.message : String(e));
  }
}

async function loadFiles(list: FileList | File[]): Promise<void> {
  const files = [...list];
  if (!files.length) return;
  loadTexts(await Promise.all(files.map(async (f) => ({ text: await f.text(), name: f.name }))), 'from your computer');
}

/** ?data=... : same-origin URLs only (a page must not be made to plot another site's file). */
async function loadFromUrl(params: string[]): Promise<void> {
  try {
    const files = await Promise.all(params.map(async (p) => {
      const url = new URL(p, location.href);
      if (url.origin !== location.origin) throw new Error(`${p} is not on this site (only same-origin files are loaded)`);
      const res = await fetch(url);
      if (!res.ok) throw new Error(`${p}: HTTP ${res.status}`);
      return { text: await res.text(), name: p };
    }));
    loadTexts(files, 'from the URL');
  } catch (e) {
    fail(e instanceof Error ? e.message : String(e));
  }
}

function mount(): void {
  const picker = testId(h('input', { type: 'file', accept: '.json,application/json', multiple: true, className: 'sr-only', id: 'bench-file' }), 'bench-file');
  picker.addEventListener('change', () => void loadFiles(picker.files ?? []).then(() => (picker.value = '')));
  const pick = h('label', { className: 'bench-pick', htmlFor: 'bench-file', textContent: 'Choose JSON files…' });
  const reset = testId(h('button', { type: 'button', textContent: 'Show the published figures' }), 'bench-default');
  reset.addEventListener('click', () => void loadDefault());
  const drop = testId(h('div', { className: 'bench-drop' },
    h('p', {}, 'Drop ', h('code', { textContent: 'npm run bench:peers' }), ' or ', h('code', { textContent: 'qkscope_bench --json' }),
      ' files anywhere on this page, or '), pick, picker, reset), 'bench-drop');
  document.addEventListener('dragover', (ev) => {
    ev.preventDefault();
    drop.classList.add('active');
  });
  document.addEventListener('dragleave', (ev) => {
    if (!ev.relatedTarget) drop.classList.remove('active');
  });
  document.addEventListener('drop', (ev) => {
    ev.preventDefault();
    drop.classList.remove('active');
    if (ev.dataTransfer?.files.length) void loadFiles(ev.dataTransfer.files);
  });
  const main = document.getElementById('bench')!;
  main.append(drop, status, error, machines, ...figures.map((f) => f.frame.el), tableBox);
  const params = new URLSearchParams(location.search).getAll('data');
  void loadDefault().then(() => (params.length ? loadFromUrl(params) : undefined));
}

mount();
