/**
 * Chapter 8, "Beyond quadratic": linear attention phi(Q)(phi(K)^T V) with phi = elu + 1
 * (Katharopoulos et al. 2020) and FAVOR+ positive random features (Choromanski et al. 2021),
 * in TypeScript (model.ts), against softmax from the core's forward(); time against L; top-k
 * and sliding window + global tokens (Longformer, BigBird) through forward().
 * TUTORIAL_FACTS §5.4, §5.5. State in the URL under "c8.".
 */
import { bool, choice, int, num } from '../../model/url-state';
import { defineChapter } from '../types';
import { linearFigure, sparseFigure, timeFigure } from './figures';
import { en, type Ch8Text } from './en';
import { zh } from './zh';
import './style.css';

function makeSpec() {
  return {
    map: choice(['elu', 'favor'] as const, 'favor'),
    m: int(64, 4, 1024),
    sigma: num(0.5, 0.25, 2, { digits: 3 }),
    causal: bool(false),
    seed: int(1, 0, 999_999),
    maxL: choice(['256', '512', '1024', '2048'] as const, '1024'),
    pattern: choice(['topk', 'window'] as const, 'topk'),
    k: int(4, 1, 16),
    w: int(2, 0, 15),
    g: int(1, 0, 4),
  };
}
export type Ch8Spec = ReturnType<typeof makeSpec>;

export default defineChapter<Ch8Text>({
  id: 'ch8',
  ns: 'c8',
  text: { en, zh },
  render(ctx, view) {
    const store = ctx.state(makeSpec());
    view.section('c8-error').append(linearFigure(ctx, store));
    view.section('c8-time').append(timeFigure(ctx, store));
    view.section('c8-sparse').append(sparseFigure(ctx, store));
  },
});
