/**
 * Chapter 9, "Diagnostics, and choosing a scoring function": per-head, per-row entropy
 * H = -sum p log p, max weight and effective support e^H from multiHeadForward on seeded
 * inputs (docs/facts.md §9), what diffuse / over-focused rows point to, and the selection
 * guide of §9. State in the URL under "c9.".
 */
import { defineChapter } from '../types';
import { quiz } from '../shared/quiz';
import { makeSpec } from './model';
import { diagnosticsFigure, guideTable } from './figures';
import { en, type Ch9Text } from './en';
import { zh } from './zh';
import './style.css';

export default defineChapter<Ch9Text>({
  id: 'ch9',
  ns: 'c9',
  text: { en, zh },
  render(ctx, view) {
    view.section('c9-check').append(quiz('c9-quiz', ctx.t.quiz));
    const store = ctx.state(makeSpec(ctx.qk.scoreFunctions.map((f) => f.name)), (v) => ({ ...v, head: Math.min(v.head, v.heads) }));
    view.section('c9-heads').append(diagnosticsFigure(ctx, store));
    view.section('c9-choose').append(guideTable(ctx));
  },
});
