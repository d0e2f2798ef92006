/**
 * Chapter 7, "What attention costs, measured": forward() time and memory against L for every
 * scoring function, measured in the reader's browser on demand; the naive path (every
 * intermediate) against the tiled one (O(L d) memory) and the JS broadcast version up to
 * L = 4096; the textbook broadcast
 * additive attention (materialising (L, L, d_h)) against the fused one; and linear concat,
 * whose weights ignore the query (w^T[q;k] = w_q.q + w_k.k, the query term cancels in
 * softmax). docs/facts.md §2, §7. State in the URL under "c7.".
 */
import { defineChapter } from '../types';
import { quiz } from '../shared/quiz';
import { makeSpec } from './model';
import { additiveFigure, linearConcatFigure, timeFigure } from './figures';
import { pathsFigure } from './paths';
import { en, type Ch7Text } from './en';
import { zh } from './zh';
import './style.css';

export default defineChapter<Ch7Text>({
  id: 'ch7',
  ns: 'c7',
  text: { en, zh },
  render(ctx, view) {
    view.section('c7-check').append(quiz('c7-quiz', ctx.t.quiz));
    const store = ctx.state(makeSpec());
    view.section('c7-time').append(timeFigure(ctx, store));
    view.section('c7-paths').append(pathsFigure(ctx, store));
    view.section('c7-additive').append(additiveFigure(ctx, store));
    view.section('c7-linear').append(linearConcatFigure(ctx, store));
  },
});
