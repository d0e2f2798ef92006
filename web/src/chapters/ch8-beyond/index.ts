/**
 * Chapter 8, "Beyond quadratic": linear attention phi(Q)(phi(K)^T V) with phi = elu + 1
 * (Katharopoulos et al. 2020) and FAVOR+ positive random features (Choromanski et al. 2021),
 * from the core's linearAttention(), against softmax from the core's forward(); time against L
 * and the crossover length; top-k and sliding window + global tokens + random keys
 * (Longformer, BigBird; the core's sparsePattern()) through forward().
 * docs/facts.md §8. State in the URL under "c8.".
 */
import { defineChapter } from '../types';
import { quiz } from '../shared/quiz';
import { makeSpec } from './model';
import { linearFigure, sparseFigure, timeFigure } from './figures';
import { en, type Ch8Text } from './en';
import { zh } from './zh';
import './style.css';

export default defineChapter<Ch8Text>({
  id: 'ch8',
  ns: 'c8',
  text: { en, zh },
  render(ctx, view) {
    view.section('c8-check').append(quiz('c8-quiz', ctx.t.quiz));
    const store = ctx.state(makeSpec());
    view.section('c8-error').append(linearFigure(ctx, store));
    view.section('c8-time').append(timeFigure(ctx, store));
    view.section('c8-sparse').append(sparseFigure(ctx, store));
  },
});
