/**
 * Figure 7.2: one attention, three code paths, against L up to 4096 (d = 64, one head):
 * - naive: the core's forward(), which returns every (L, L) intermediate (scores, masked
 *   scores, weights: the teaching path), for scaled dot and additive;
 * - tiled: the tiled module's attention() (online softmax, Dao et al. 2022, Alg. 1), output
 *   and logsumexp only, O(L d) memory, for the same two scoring functions;
 * - broadcast: the textbook additive attention in JavaScript (model.ts), two (L, L, d_h) tensors.
 * Time: median of warm runs in the page's Web Worker (the broadcast version too, as a job of
 * web/src/worker/jobs.ts). Memory: bytes of the arrays each call hands back, counted by the
 * worker; for the broadcast version, the two tensors it allocates. Caps keep the L^2 paths
 * from exhausting a phone's memory and are stated in the figure (CAPS below). Without a
 * worker everything runs on the page's thread, and the broadcast version stops at
 * PAGE_BROADCAST_CAP (one call at L = 512 would block the page for ~0.25 s).
 */
import type { ScoreName } from '@qkscope/wasm';
import { fill } from '../../i18n';
import { runTimed } from '../shared/timed-run';
import { qkWorker } from '../../worker/client';
import { LineChart, type LineSeries } from '../../charts/line';
import type { FigureData } from '../../charts/export';
import { sig } from '../../model/format';
import type { ChapterContext } from '../types';
import type { Store } from '../shared/store';
import { h, testId } from '../shared/dom';
import { FigureFrame } from '../shared/figure';
import { radios, controlGroup } from '../shared/controls';
import { type Timing, broadcastAdditive, bytesText, inputsByLength, memoryBytes, powersOfTwo } from './model';
import type { Ch7Spec } from './model';
import type { Ch7Text } from './en';

type Ctx = ChapterContext<Ch7Text>;
const D = 64;
const DH = 16;
const REPS = 3;
const PREVIEW_L = 256;
const MB = 1024 * 1024;
/**
 * Largest L per path: naive stores four (L, L) float32 copies (256 MB at 4096); broadcast
 * allocates two (L, L, d_h) tensors (128 MB at L = 1024, d_h = 16; 512 MB at 2048).
 */
export const CAPS = { naive: 2048, tiled: 4096, broadcast: 1024 } as const;
/** The broadcast version's cap on the page's own thread (no worker): past it one call blocks the page for over 50 ms several times over. */
export const PAGE_BROADCAST_CAP = 256;

type SeriesId = 'naive_dot' | 'tiled_dot' | 'naive_add' | 'tiled_add' | 'broadcast_add';
const SERIES: readonly { id: SeriesId; path: keyof typeof CAPS; score: ScoreName; color: number; dashed: boolean }[] = [
  { id: 'naive_dot', path: 'naive', score: 'scaled_dot', color: 1, dashed: false },
  { id: 'tiled_dot', path: 'tiled', score: 'scaled_dot', color: 1, dashed: true },
  { id: 'naive_add', path: 'naive', score: 'additive', color: 5, dashed: false },
  { id: 'tiled_add', path: 'tiled', score: 'additive', color: 5, dashed: true },
  { id: 'broadcast_add', path: 'broadcast', score: 'additive', color: 4, dashed: false },
];

export function pathsFigure(ctx: Ctx, store: Store<Ch7Spec>): HTMLElement {
  const t = ctx.t.paths;
  const t1 = ctx.t.fig1;
  const labels: Record<SeriesId, string> = { naive_dot: t.naiveDot, tiled_dot: t.tiledDot, naive_add: t.naiveAdd, tiled_add: t.tiledAdd, broadcast_add: t.broadcast };
  const runButton = testId(h('button', { type: 'button', className: 'button primary', textContent: t1.run }), 'c7-paths-run');
  const status = testId(h('p', { className: 'hint run-status', textContent: t1.notRun }), 'c7-paths-status');
  status.setAttribute('aria-live', 'polite');
  const summary = testId(h('p', { className: 'figure-summary' }), 'c7-paths-summary');
  const memNote = testId(h('p', { className: 'hint' }), 'c7-paths-memnote');
  const caps = { ...CAPS, broadcast: qkWorker() ? CAPS.broadcast : PAGE_BROADCAST_CAP };
  const capNote = h('p', { className: 'hint', textContent: fill(t.caps, { naive: caps.naive, broadcast: caps.broadcast, dh: DH }) });
  const timeChart = new LineChart('c7-paths-time');
  const memChart = new LineChart('c7-paths-memory');
  const charts = h('div', { className: 'panels', hidden: true },
    h('div', { className: 'panel' }, h('h3', { textContent: t.timeTitle }), timeChart.el),
    h('div', { className: 'panel' }, h('h3', { textContent: t.memTitle }), memChart.el, memNote));
  let results: Timing[] = [];
  let generation = 0;

  const series = (value: (r: Timing) => number | undefined): LineSeries[] => SERIES.map((s) => ({
    id: s.id, label: labels[s.id], color: s.color, dashed: s.dashed,
    points: results.filter((r) => r.series === s.id && value(r) !== undefined).map((r) => ({ x: r.x, y: Math.max(value(r)!, 1e-3) })),
  })).filter((s) => s.points.length > 0);

  const draw = () => {
    if (results.length === 0) {
      charts.hidden = true;
      summary.textContent = '';
      memNote.textContent = '';
      return;
    }
    charts.hidden = false;
    const Ls = powersOfTwo(64, Math.max(...results.map((r) => r.x)));
    timeChart.update({ label: t.timeLabel, x: { label: t1.axisL, scale: 'log', ticks: Ls }, y: { label: t1.axisMs, scale: 'log' }, series: series((r) => r.ms), height: 320,
      pointLabel: (s, p) => `${s.label}: L = ${p.x}, ${sig(p.y)} ms` });
    memChart.update({ label: t.memLabel, x: { label: t1.axisL, scale: 'log', ticks: Ls }, y: { label: t.axisMb, scale: 'log' }, series: series((r) => (r.bytes === undefined ? undefined : r.bytes / MB)), height: 320,
      pointLabel: (s, p) => `${s.label}: L = ${p.x}, ${bytesText(p.y * MB)}` });
    const at = (id: SeriesId, L: number) => results.find((r) => r.series === id && r.x === L);
    const both = results.filter((r) => r.series === 'tiled_dot' && at('naive_dot', r.x)).map((r) => r.x);
    const L = both.length ? Math.max(...both) : undefined;
    if (L !== undefined) {
      const n = at('naive_dot', L)!, tl = at('tiled_dot', L)!;
      summary.textContent = fill(t.summary, { L, naive: sig(n.ms), tiled: sig(tl.ms), nb: bytesText(n.bytes ?? 0), tb: bytesText(tl.bytes ?? 0) });
      summary.dataset.L = String(L);
    } else summary.textContent = '';
    const top = results.filter((r) => r.series === 'tiled_dot').reduce<Timing | undefined>((a, r) => (!a || r.x > a.x ? r : a), undefined);
    if (top?.bytes !== undefined) {
      memNote.textContent = fill(t.memNote, { L: top.x, b: bytesText(top.bytes), per: sig(top.bytes / (top.x * D)), d: D });
      memNote.dataset.bytes = String(top.bytes);
    }
  };

  const run = async (upTo?: number): Promise<void> => {
    const my = ++generation;
    const maxL = upTo ?? Number(store.get().pathL);
    const Ls = powersOfTwo(64, maxL);
    results = [];
    draw();
    const params = ctx.qk.initParams('additive', D, D, DH, 0);
    const p = { W_q: params.W_q!, W_k: params.W_k!, v: params.v!, b: params.b! };
    const broadcastBytes = new Map<number, number>();
    const worker = qkWorker();
    // Without a worker (or when it fails) the tiled calls run here, on the tiled module loaded here.
    let tiled = worker ? null : await ctx.qk.tiled();
    if (my !== generation) return;
    const inputs = inputsByLength(3, D);
    const tasks = Ls.flatMap((L) => {
      return SERIES.filter((s) => L <= caps[s.path]).map((s) => {
        if (s.path === 'broadcast') {
          // Its memory is what it allocates: the two (L, L, d_h) tensors, reported by the call
          // itself (here), or their size from the shapes when the worker ran it (the same number).
          return {
            series: s.id, x: L, run: () => void broadcastBytes.set(L, broadcastAdditive(inputs(L).Q, inputs(L).K, inputs(L).V, p).tensorBytes),
            ...(worker ? {
              remote: async (reps: number, slowMs: number) => {
                const r = await worker.time('broadcastAdditive', [inputs(L).Q, inputs(L).K, inputs(L).V, p], reps, slowMs, 'c7-paths');
                broadcastBytes.set(L, memoryBytes(L, D, DH).broadcast);
                return r;
              },
            } : {}),
          };
        }
        const options = () => ({ query: inputs(L).Q, key: inputs(L).K, value: inputs(L).V, score: s.score, ...(s.score === 'additive' ? { params } : {}) });
        const method = s.path === 'tiled' ? 'attention' as const : 'forward' as const;
        return {
          series: s.id, x: L,
          run: () => void (s.path === 'tiled' ? tiled!.attention(options()) : ctx.qk.forward(options())),
          ...(worker ? {
            remote: async (reps: number, slowMs: number) => {
              try {
                return await worker.time(method, [options()], reps, slowMs, 'c7-paths');
              } catch (e) {
                tiled ??= await ctx.qk.tiled(); // measure() falls back to run() on this thread
                throw e;
              }
            },
          } : {}),
        };
      });
    });
    await runTimed({
      tasks, reps: REPS, status, button: runButton, text: upTo ? { running: t1.running, done: fill(t1.preview, { L: upTo }) } : t1,
      stale: () => my !== generation,
      onResult: (res) => {
        const bytes = res.series === 'broadcast_add' ? broadcastBytes.get(res.x) : undefined;
        results.push(bytes !== undefined ? { ...res, bytes } : res);
        draw();
      },
    });
  };
  runButton.addEventListener('click', () => void run());

  const fig = new FigureFrame(ctx.cat, {
    id: 'figure-c7-paths',
    title: t.title,
    caption: t.caption,
    onReset: () => store.reset(['pathL']),
    charts: () => (results.length ? [{ title: t.timeTitle, parts: timeChart.parts() }, { title: t.memTitle, parts: memChart.parts() }] : []),
    data: (): FigureData => ({
      columns: ['series', 'L', 'ms', 'bytes', 'runs', 'thread'],
      rows: results.map((r) => [r.series, r.x, r.ms, r.bytes ?? '', r.runs, r.thread]),
      json: { d: D, dh: DH, caps, repsPerPoint: REPS, userAgent: navigator.userAgent, timings: results },
    }),
  });
  const controls = controlGroup(ctx.cat.common.controls,
    radios(store, 'pathL', { id: 'c7-pathl', label: t1.maxL, options: ['512', '1024', '2048', '4096'].map((x) => [x, x] as const), hint: t.maxLHint }),
    h('div', { className: 'control run-row' }, runButton, status));
  fig.body.append(controls, summary, capNote, charts);
  store.on((_, changed) => {
    if (changed.has('pathL')) void run(PREVIEW_L);
  });
  ctx.whenVisible(fig.el, () => generation === 0 && void run(PREVIEW_L));
  return fig.el;
}
