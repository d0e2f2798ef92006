/**
 * Chapter 3, "Why divide by √d_k": the variance of q·k grows like d_k (docs/facts.md §3),
 * shown by a Monte Carlo run in the browser through the core's forward(), and what large
 * logits do to softmax (saturation, vanishing Jacobian). State in the URL under "c3.".
 */
import type { QkScope } from '@qkscope/wasm';
import { tex } from '../../model/format';
import { defineChapter } from '../types';
import { quiz } from '../shared/quiz';
import { makeSpec } from './model';
import { saturationFigure, varianceFigure } from './figures';
import { en, type Ch3Text } from './en';
import { zh } from './zh';
import './style.css';

/** x in TeX scientific notation: 1.5 \times 10^{-10}. */
function texSci(x: number, digits = 2): string {
  const [m, e] = x.toExponential(digits - 1).split('e');
  return `${m} \\times 10^{${Number(e)}}`;
}

/**
 * Two keys whose logits differ by `gap`, through the core's softmax (dot score, q = [1]):
 * the larger weight p, the smaller one (1 - p, read directly: float32 cannot hold p's
 * distance from 1 at large gaps) and the Jacobian entry p(1 - p).
 */
function twoKeys(qk: QkScope, gap: number): { p: number; rest: number; j: number } {
  const w = qk.forward({ query: [[1]], key: [[gap], [0]], value: [[0], [0]], score: 'dot' }).weights.data;
  return { p: w[0]!, rest: w[1]!, j: w[0]! * w[1]! };
}

export default defineChapter<Ch3Text>({
  id: 'ch3',
  ns: 'c3',
  text: { en, zh },
  vars: (ctx) => {
    const std = Math.sqrt(512);
    // The scale the core uses for bilinear when none is given (its registry default).
    const bil = ctx.qk.forward({ query: [[1, 0]], key: [[1, 0]], value: [[0]], score: 'bilinear', params: { W: [[1, 0], [0, 1]] } });
    const big = twoKeys(ctx.qk, std);
    const small = twoKeys(ctx.qk, 1);
    return {
      std512: tex(std, 1),
      pSmall: tex(small.p, 3),
      jSmall: tex(small.j, 3),
      gapBig: tex(std, 1),
      pBig: `1 - ${texSci(big.rest)}`,
      jBig: texSci(big.j),
      bilScale: tex(bil.scale, 4, true),
    };
  },
  render(ctx, view) {
    view.section('c3-check').append(quiz('c3-quiz', ctx.t.quiz));
    const store = ctx.state(makeSpec());
    view.section('c3-variance').append(varianceFigure(ctx, store));
    view.section('c3-saturation').append(saturationFigure(ctx, store));
  },
});
