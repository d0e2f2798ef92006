/**
 * Chapter 4, "Temperature": p = softmax(z / tau) on one shared example (3 queries x 6 keys),
 * with entropy H, max weight and effective support exp(H) read out live, the entropy swept
 * over tau, and the tau -> 0 limit compared with the hard argmax (docs/facts.md §2, §4).
 * State in the URL under "c4.".
 */
import { tex, texRow } from '../../model/format';
import { row } from '../../model/matrix';
import { defineChapter } from '../types';
import { quiz } from '../shared/quiz';
import { temperatureFigure } from './figure';
import { distanceToHard, makeSpec, run } from './model';
import { en, type Ch4Text } from './en';
import { zh } from './zh';
import './style.css';

export default defineChapter<Ch4Text>({
  id: 'ch4',
  ns: 'c4',
  text: { en, zh },
  vars: (ctx) => {
    const r = run(ctx.qk, 1);
    const H = r.entropy[0]!;
    const soft = run(ctx.qk, 0.01);
    const hard = run(ctx.qk, 0.01, { normalizer: 'hard' });
    const gap = distanceToHard(row(soft.weights, 0), row(hard.weights, 0));
    const [m, e] = gap.toExponential(1).split('e');
    const a = run(ctx.qk, 1, {}, [[4, 3, 2]]);
    const b = run(ctx.qk, 1, {}, [[-4, -5, -6]]);
    return {
      w1: texRow(row(r.weights, 0), 3),
      h1: tex(H, 3),
      log6: tex(Math.log(6), 3),
      m1: tex(r.maxWeight[0]!, 3),
      s1: tex(Math.exp(H), 2),
      hardGap: gap === 0 ? '0' : `${m} \\times 10^{${Number(e)}}`,
      wa: texRow(row(a.weights, 0), 4),
      wb: texRow(row(b.weights, 0), 4),
    };
  },
  render(ctx, view) {
    view.section('c4-check').append(quiz('c4-quiz', ctx.t.quiz));
    const store = ctx.state(makeSpec());
    view.section('c4-play').append(temperatureFigure(ctx, store));
  },
});
