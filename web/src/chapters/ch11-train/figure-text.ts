/**
 * Figure 11.2, attention over real text: next-character models trained on Ambrose Bierce's
 * "The Devil's Dictionary", one per scoring function (weights shipped as
 * train-models/devil-<score>.json, docs/training.md "Shipped models"), run by the core in the
 * page's worker (TrainOp 'charLoad', 'charPredict'). The reader types; every keystroke asks
 * for a prediction on one coalescing channel, so only the newest text is computed, and only
 * the bars that moved are redrawn. Shown: for one query position, the weight each layer's
 * and head's attention gives every character read so far, and the model's top next
 * characters after that position.
 */
import { fill } from '../../i18n';
import { coreMessage } from '../../i18n/core-errors';
import { choice, int } from '../../model/url-state';
import { fixed } from '../../model/format';
import { type FigureData, matricesTable } from '../../charts/export';
import { FigureFrame } from '../shared/figure';
import { controlGroup, select } from '../shared/controls';
import { h, testId } from '../shared/dom';
import type { ChapterContext } from '../types';
import type { CharInfo, CharResult } from '../../worker/protocol';
import type { TrainBackend } from './runner';
import { scoreLabel } from './settings';
import { AttentionStrip } from './strip';
import type { Ch11Text } from './en';

const TOP = 5;
const shown = (ch: string) => (ch === ' ' ? '␣' : ch);

export function textFigure(ctx: ChapterContext<Ch11Text>, backend: TrainBackend): HTMLElement {
  const t = ctx.t.text;
  const scores = ctx.qk.scoreFunctions.map((f) => f.name);
  const store = ctx.state({ tscore: choice(scores, 'scaled_dot'), tq: int(0, 0, 64) });
  const input = testId(h('input', { type: 'text', id: 'c11-text-input', value: t.defaultText, maxLength: 200, autocomplete: 'off', spellcheck: false }), 'c11-text-input');
  const inputBox = h('div', { className: 'control c11-text-control' }, h('label', { htmlFor: input.id, textContent: t.input }), input);
  let n = 0;
  let readText = '';
  // The query position, 1..n from the left; the store's 0 means "the last character" (the
  // default, which follows the text as it grows), so the slider sits at the right end then.
  const range = testId(h('input', { type: 'range', id: 'c11-text-query', min: '1', step: '1' }), 'c11-text-query');
  const rangeOut = h('output', {});
  rangeOut.setAttribute('for', range.id);
  const position = () => {
    const tq = store.get().tq;
    return n === 0 ? 0 : tq === 0 || tq > n ? n : tq;
  };
  const showRange = () => {
    const q = position();
    range.max = String(Math.max(1, n));
    range.value = String(Math.max(1, q));
    range.disabled = n === 0;
    const text = q === 0 ? t.empty : fill(q === n && store.get().tq === 0 ? t.lastAt : t.at, { pos: q, ch: shown(readText[q - 1] ?? '') });
    rangeOut.textContent = text;
    range.setAttribute('aria-valuetext', text);
  };
  range.addEventListener('input', () => {
    const v = Number(range.value);
    store.set({ tq: v >= n ? 0 : v }, { defer: true });
  });
  const rangeBox = h('div', { className: 'control' }, h('label', { htmlFor: range.id }, h('span', { textContent: t.query }), rangeOut), range);
  const controls = controlGroup(ctx.cat.common.controls,
    select(store, 'tscore', { id: 'c11-text-score', label: t.score, options: scores.map((s) => [s, scoreLabel(ctx, s)]) }),
    rangeBox,
  );
  const reads = testId(h('p', { className: 'hint c11-reads' }), 'c11-text-reads');
  const status = testId(h('p', { className: 'c11-error', hidden: true }), 'c11-text-error');
  status.setAttribute('role', 'alert');
  const strips = h('div', { className: 'c11-strips' });
  const topList = testId(h('ol', { className: 'c11-top' }), 'c11-text-top');
  const topItems = Array.from({ length: TOP }, () => {
    const ch = h('span', { className: 'c11-top-char' });
    const bar = h('span', { className: 'c11-top-bar' });
    const p = h('span', { className: 'c11-top-p' });
    const li = h('li', {}, ch, h('span', { className: 'c11-top-track' }, bar), p);
    topList.append(li);
    return { li, ch, bar, p };
  });
  // Named before the model answers (a heading is never empty: axe-core's empty-heading).
  const topTitle = h('h3', { textContent: t.topTitleWaiting });

  let panels: { strip: AttentionStrip; layer: number; head: number }[] = [];
  let layout = '';
  let last: { info: CharInfo; r: CharResult } | null = null;

  const loaded = new Map<string, Promise<CharInfo>>();
  const load = (score: string): Promise<CharInfo> => {
    let p = loaded.get(score);
    if (!p) {
      const url = new URL(`train-models/devil-${score}.json`, document.baseURI).href;
      p = fetch(url)
        .then((res) => {
          if (!res.ok) throw new Error(fill(t.fetchFailed, { name: `devil-${score}.json`, status: res.status }));
          return res.json();
        })
        .then((weights) => backend.train<CharInfo>({ op: 'charLoad', key: score, weights }));
      p.catch(() => loaded.delete(score));
      loaded.set(score, p);
    }
    return p;
  };

  const draw = (info: CharInfo, r: CharResult) => {
    last = { info, r };
    n = r.text.length;
    readText = r.text;
    const key = `${info.score}:${info.layers}x${info.heads}`;
    if (key !== layout) {
      layout = key;
      panels = [];
      strips.replaceChildren();
      for (let l = 0; l < info.layers; l++)
        for (let hd = 0; hd < info.heads; hd++) {
          const strip = new AttentionStrip(`c11-strip-${l}-${hd}`);
          panels.push({ strip, layer: l, head: hd });
          strips.append(h('div', { className: 'c11-strip-box' }, h('h4', { textContent: fill(t.headTitle, { layer: l + 1, head: hd + 1 }) }), strip.el));
        }
    }
    const q = position() - 1;
    showRange();
    reads.textContent = n ? fill(t.reads, { text: r.text, n, context: info.context }) : t.empty;
    panels.forEach((p, k) => {
      const a = r.attention[k]!;
      const row = q >= 0 ? a.data.subarray(q * a.cols, q * a.cols + a.cols) : new Float32Array(0);
      let best = 0;
      for (let j = 1; j < row.length; j++) if (row[j]! > row[best]!) best = j;
      const label = q >= 0 ? fill(t.stripLabel, { layer: p.layer + 1, head: p.head + 1, pos: q + 1, ch: shown(r.text[q]!), top: shown(r.text[best] ?? ''), w: fixed(row[best] ?? 0, 2) }) : t.empty;
      p.strip.update(r.text, row, q, label);
    });
    // Top next characters after position q (row q of next: a softmax over the vocabulary).
    topTitle.textContent = q >= 0 ? fill(t.topTitle, { pos: q + 1, ch: shown(r.text[q]!) }) : t.empty;
    const probs = q >= 0 ? Array.from(r.next.data.subarray(q * r.next.cols, (q + 1) * r.next.cols)) : [];
    const order = probs.map((p, k) => [p, k] as const).sort((a, b) => b[0] - a[0]).slice(0, TOP);
    topItems.forEach((it, k) => {
      const o = order[k];
      it.li.hidden = !o;
      if (!o) return;
      const ch = info.vocabulary[o[1]]!;
      it.ch.textContent = ch === '#' && o[1] === info.vocabulary.length - 1 ? t.other : `“${shown(ch)}”`;
      it.bar.style.width = `${Math.round(o[0] * 100)}%`;
      it.p.textContent = fixed(o[0], 3);
      it.li.dataset.char = ch;
    });
  };

  let generation = 0;
  const run = async () => {
    const my = ++generation;
    const score = store.get().tscore;
    try {
      const info = await load(score);
      const r = await backend.train<CharResult>({ op: 'charPredict', key: score, text: input.value }, 'c11-text');
      if (my !== generation) return;
      status.hidden = true;
      draw(info, r);
      frame.el.dataset.ready = 'true';
    } catch (e) {
      if ((e as Error).name === 'AbortError' || my !== generation) return;
      status.textContent = fill(t.failed, { message: coreMessage(ctx.lang, e) });
      status.hidden = false;
    }
  };
  input.addEventListener('input', () => void run());
  store.on((_, changed) => {
    if (changed.has('tscore')) void run();
    else if (changed.has('tq') && last) draw(last.info, last.r);
  });

  const frame = new FigureFrame(ctx.cat, {
    id: 'figure-c11-text',
    title: t.title,
    caption: t.caption,
    onReset: () => {
      store.reset();
      input.value = t.defaultText;
      void run();
    },
    charts: () => panels.map((p) => ({ title: fill(t.headTitle, { layer: p.layer + 1, head: p.head + 1 }), parts: p.strip.parts() })),
    data: (): FigureData => {
      if (!last) return { columns: [], rows: [] };
      const d = matricesTable(panels.map((p, k) => [`layer${p.layer + 1}_head${p.head + 1}`, last!.r.attention[k]!]), 'query', 'key');
      return { ...d, json: { score: last.info.score, text: last.r.text, vocabulary: last.info.vocabulary, attention: d.json, next: matricesTable([['next', last.r.next]], 'position', 'token').json } };
    },
  });
  frame.body.append(inputBox, controls, reads, status, h('h3', { className: 'c11-strips-title', textContent: t.stripsTitle }), strips, h('div', { className: 'c11-top-box' }, topTitle, topList));
  ctx.whenVisible(frame.el, () => void run());
  return frame.el;
}
