/**
 * Chapter 9, "Diagnostics, and choosing a scoring function": per-head, per-row entropy
 * H = -sum p log p, max weight and effective support e^H from multiHeadForward on seeded
 * inputs (TUTORIAL_FACTS §8), what diffuse / over-focused rows point to, and the selection
 * guide of §9. State in the URL under "c9.".
 */
import { choice, int, num } from '../../model/url-state';
import { defineChapter } from '../types';
import { diagnosticsFigure, guideTable } from './figures';
import { en, type Ch9Text } from './en';
import { zh } from './zh';
import './style.css';

function makeSpec(names: readonly string[]) {
  return {
    score: choice(names, 'scaled_dot'),
    sigma: num(1, 0.1, 10, { digits: 3 }),
    tau: num(1, 0.1, 10, { digits: 3 }),
    heads: int(4, 1, 8),
    L: int(8, 2, 16),
    head: int(1, 1, 8),
    seed: int(1, 0, 999_999),
  };
}
export type Ch9Spec = ReturnType<typeof makeSpec>;

export default defineChapter<Ch9Text>({
  id: 'ch9',
  ns: 'c9',
  text: { en, zh },
  render(ctx, view) {
    const store = ctx.state(makeSpec(ctx.qk.scoreFunctions.map((f) => f.name)), (v) => ({ ...v, head: Math.min(v.head, v.heads) }));
    view.section('c9-heads').append(diagnosticsFigure(ctx, store));
    view.section('c9-choose').append(guideTable(ctx));
  },
});
