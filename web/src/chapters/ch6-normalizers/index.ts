/**
 * Chapter 6, "Normalizers": softmax, hard (argmax, lowest index on ties), Gumbel-softmax
 * (seeded; hard = straight-through), sparsemax (Martins & Astudillo 2016) and top-k softmax
 * on the same logits, and the Gumbel-max trick checked by sampling (TUTORIAL_FACTS §6, §8).
 * State in the URL under "c6.".
 */
import { bool, choice, int, num } from '../../model/url-state';
import { texRow } from '../../model/format';
import { row } from '../../model/matrix';
import { defineChapter } from '../types';
import { gumbelFigure, normalizersFigure } from './figures';
import { runNorm } from './model';
import { en, type Ch6Text } from './en';
import { zh } from './zh';
import './style.css';

function makeSpec() {
  return {
    tau: num(1, 0.05, 20, { digits: 3 }),
    k: int(2, 1, 6),
    seed: int(1, 0, 999_999),
    hard: bool(false),
    row: choice(['1', '2', '3'] as const, '1'),
    samples: choice(['100', '1000', '5000'] as const, '1000'),
  };
}
export type Ch6Spec = ReturnType<typeof makeSpec>;

export default defineChapter<Ch6Text>({
  id: 'ch6',
  ns: 'c6',
  text: { en, zh },
  vars: (ctx) => {
    const base = { tau: 1, k: 2, seed: 1, hard: false };
    return {
      hard3: texRow(row(runNorm(ctx.qk, 'hard', base).weights, 2), 0),
      sparse1: texRow(row(runNorm(ctx.qk, 'sparsemax', base).weights, 1), 3, true),
    };
  },
  render(ctx, view) {
    const store = ctx.state(makeSpec());
    view.section('c6-compare').append(normalizersFigure(ctx, store));
    view.section('c6-gumbel').append(gumbelFigure(ctx, store));
  },
});
