/**
 * Chapter 1, "What a score is": prose from its catalogs (en.ts, zh.ts), with the worked
 * example filled in live from the core, and Figure 1.1 (the playground).
 * X = [[1,0,1,0],[0,1,0,1],[1,1,0,0]], Q = K = V = X, S = X X^T / sqrt(4).
 */
import type { QkScope } from '@qkscope/wasm';
import { argmax, row, toRows } from '../../model/matrix';
import { tex, texMatrix, texRow, textRow } from '../../model/format';
import type { Vars } from '../shared/rich';
import { defineChapter } from '../types';
import { quiz } from '../shared/quiz';
import { WORKED_X, makeSpec, normalize } from './model';
import { ScoreFigure } from './figure';
import { compareTable } from './compare';
import { termLinks } from './terms';
import { en, type Ch1Text } from './en';
import { zh } from './zh';
import './style.css';

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

export default defineChapter<Ch1Text>({
  id: 'ch1',
  // Plain keys (?score=additive&tau=2), as before the chapters had namespaces.
  ns: '',
  text: { en, zh },
  vars: (ctx) => workedExampleVars(ctx.qk),
  render(ctx, view) {
    view.section('c1-check').append(quiz('c1-quiz', ctx.t.quiz));
    const store = ctx.state(makeSpec(ctx.qk.scoreFunctions.map((f) => f.name)), normalize);
    const figure = new ScoreFigure(ctx.qk, ctx.cat, ctx.t.figure, store);
    view.section('playground').append(figure.el);
    // The linked terms sit right above the three matrices they point into (or above the figure).
    const terms = termLinks(ctx.t.terms, figure.el);
    const charts = figure.el.querySelector('[data-testid="heatmap-scores"]')?.closest('.charts');
    if (charts?.parentElement) charts.parentElement.insertBefore(terms, charts);
    else figure.el.before(terms);
    view.section('compare').append(compareTable(ctx.qk.scoreFunctions, ctx.cat, ctx.t.compare));
  },
});
