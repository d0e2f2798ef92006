/**
 * Chapter 1, "What a score is": prose from the catalog, with the worked example
 * (TUTORIAL_FACTS §4) filled in live from the core, and Figure 1.
 * X = [[1,0,1,0],[0,1,0,1],[1,1,0,0]], Q = K = V = X, S = X X^T / sqrt(4).
 */
import type { QkScope } from '../../../wasm/qkscope.js';
import type { Catalog } from '../i18n';
import { WORKED_X, type StateContext, type ViewState } from '../model/state';
import { argmax, row, toRows } from '../model/matrix';
import { tex, texMatrix, texRow, textRow } from '../model/format';
import { inline, rich, type Vars } from './rich';
import { ScoreFigure } from './figure1';

/** Live numbers of the worked example, as TeX or text, for the {{slots}} of the prose. */
export function workedExampleVars(qk: QkScope): Vars {
  const X = WORKED_X;
  const base = { query: X, key: X, value: X, score: 'scaled_dot' as const };
  const r = qk.forward(base);
  const w1 = row(r.weights, 0);
  // Masking before scoring: key 3 zeroed still gets a score (0) and a weight.
  const zeroKey = X.map((x, i) => (i === 2 ? x.map(() => 0) : x));
  const z = qk.forward({ ...base, key: zeroKey });
  // Masking after scoring: key 3 excluded by padding (only 2 valid keys).
  const pad = qk.forward({ ...base, keyLength: 2 });
  const top = argmax(w1);
  return {
    X: texMatrix(X, 0, true),
    XXt: texMatrix(toRows(r.rawScores), 4, true),
    raw1: texRow(row(r.rawScores, 0), 4, true),
    dk: String(X[0]!.length),
    sqrtdk: tex(1 / r.scale, 4, true),
    S: texMatrix(toRows(r.scores), 4, true),
    s1: texRow(row(r.scores, 0), 4, true),
    lse1: tex(r.logsumexp[0]!, 4),
    w1: texRow(w1, 4),
    w1text: textRow(w1, 4),
    w11: tex(w1[0]!, 4),
    w12: tex(w1[1]!, 4),
    w13: tex(w1[2]!, 4),
    W: texMatrix(toRows(r.weights), 4),
    o1: texRow(row(r.output, 0), 4),
    O: texMatrix(toRows(r.output), 4),
    top1: String(top + 1),
    zeroKeyW: tex(z.weights.data[2]!, 4).replace('-', '\u2212'),
    padW: texRow(row(pad.weights, 0), 4),
  };
}

export interface Chapter1 {
  el: HTMLElement;
  /** Section anchors for the table of contents. */
  toc: { id: string; title: string }[];
  figure: ScoreFigure;
}

/** Builds the chapter. The figure reports state changes through `onState`. */
export function renderChapter1(
  qk: QkScope,
  cat: Catalog,
  ctx: StateContext,
  state: ViewState,
  onState: (s: ViewState) => void,
): Chapter1 {
  const text = cat.chapter1;
  const vars = workedExampleVars(qk);
  const el = document.createElement('article');
  el.className = 'chapter';
  el.id = text.id;
  const head = document.createElement('header');
  head.className = 'chapter-head';
  const kicker = Object.assign(document.createElement('p'), { className: 'kicker', textContent: text.kicker });
  const h1 = Object.assign(document.createElement('h1'), { textContent: text.title });
  h1.dataset.testid = 'chapter-title';
  const lede = Object.assign(document.createElement('p'), { className: 'lede', textContent: text.lede });
  head.append(kicker, h1, lede);
  el.append(head);
  const figure = new ScoreFigure(qk, cat, ctx, state, onState);
  for (const s of text.sections) {
    const sec = document.createElement('section');
    sec.id = s.id;
    sec.dataset.testid = `section-${s.id}`;
    sec.setAttribute('aria-labelledby', `${s.id}-h`);
    sec.innerHTML = `<h2 id="${s.id}-h">${inline(s.title)}</h2><div class="prose">${rich(s.body, vars)}</div>`;
    el.append(sec);
    if (s.id === 'playground') sec.append(figure.el);
  }
  return { el, toc: text.sections.map((s) => ({ id: s.id, title: s.title })), figure };
}
