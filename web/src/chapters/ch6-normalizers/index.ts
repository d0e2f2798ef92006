/**
 * Chapter 6, "Normalizers": softmax, hard (argmax, lowest index on ties), Gumbel-softmax
 * (seeded; hard = straight-through), sparsemax (Martins & Astudillo 2016) and top-k softmax
 * on the same logits, and the Gumbel-max trick checked by sampling (docs/facts.md §6, §9).
 * State in the URL under "c6.".
 */
import { texRow } from '../../model/format';
import { row } from '../../model/matrix';
import { defineChapter } from '../types';
import { quiz } from '../shared/quiz';
import { gumbelFigure, normalizersFigure } from './figures';
import { makeSpec, runNorm } from './model';
import { en, type Ch6Text } from './en';
import { zh } from './zh';
import './style.css';

const TIE_TAU = 0.05;

export default defineChapter<Ch6Text>({
  id: 'ch6',
  ns: 'c6',
  text: { en, zh },
  vars: (ctx) => {
    const base = { tau: 1, k: 2, seed: 1, hard: false };
    return {
      hard3: texRow(row(runNorm(ctx.qk, 'hard', base).weights, 2), 0),
      sparse1: texRow(row(runNorm(ctx.qk, 'sparsemax', base).weights, 1), 3, true),
      // Low temperature on the tied row 3: an even split over keys 1 and 2, not a one-hot.
      tieTau: String(TIE_TAU),
      tie3: texRow(row(runNorm(ctx.qk, 'softmax', { ...base, tau: TIE_TAU }).weights, 2), 3, true),
    };
  },
  render(ctx, view) {
    view.section('c6-check').append(quiz('c6-quiz', ctx.t.quiz));
    const store = ctx.state(makeSpec());
    view.section('c6-compare').append(normalizersFigure(ctx, store));
    view.section('c6-gumbel').append(gumbelFigure(ctx, store));
  },
});
