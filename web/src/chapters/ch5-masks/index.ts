/**
 * Chapter 5, "Masks and biases": key padding, causal (top-left vs bottom-right), sliding
 * window, ALiBi, T5 relative-position buckets (t5Buckets()), graph adjacency and soft-capping,
 * all through the core's forward(); a fully masked row and mask fill values in float16 /
 * bfloat16 / float32 through precisionSoftmax() (docs/facts.md §2, §5, §10). State in the URL
 * under "c5.".
 */
import { texRow, trimmed } from '../../model/format';
import { row } from '../../model/matrix';
import { defineChapter } from '../types';
import { quiz } from '../shared/quiz';
import { alibiFigure, graphFigure, maskFigure } from './figures-masks';
import { precisionFigure, softcapFigure } from './figures-numerics';
import { t5Figure } from './figures-t5';
import { ADDITIVE_DEMO, additiveMaskRow, alibiSlopes, DEFAULT_EDGES, DTYPES, EMPTY_DEMO, emptyCausalRows, FILLS, makeSpec, PREC_MASK, PREC_SCORES } from './model';
import { en, type Ch5Text } from './en';
import { zh } from './zh';
import './style.css';

export default defineChapter<Ch5Text>({
  id: 'ch5',
  ns: 'c5',
  text: { en, zh },
  vars: (ctx) => {
    const bf = ctx.qk.precisionSoftmax({ scores: PREC_SCORES, mask: PREC_MASK, dtype: 'bfloat16', method: 'masked_fill', fill: -1e9 });
    const s12 = alibiSlopes(12).map((m) => `2^{${trimmed(Math.log2(m), 1).replace('\u2212', '-')}}`);
    const rows = (alignment: 'top_left' | 'bottom_right') => {
      const empty = emptyCausalRows(ctx.qk, EMPTY_DEMO.lq, EMPTY_DEMO.lk, alignment);
      return empty.length ? empty.join(', ') : ctx.t.figMask.none;
    };
    const add = additiveMaskRow(ctx.qk, ADDITIVE_DEMO.severe);
    const mild = additiveMaskRow(ctx.qk, ADDITIVE_DEMO.mild);
    const texVec = (xs: ArrayLike<number>, d: number) => texRow(xs, d, true).replace(/NaN/g, '\\text{NaN}');
    return {
      slopes12: `\\begin{gathered} ${[0, 4, 8].map((k) => s12.slice(k, k + 4).join(',\\ ')).join(', \\\\ ')} \\end{gathered}`,
      bf16: String(bf.constantStored),
      brLq: String(EMPTY_DEMO.lq),
      brLk: String(EMPTY_DEMO.lk),
      brEmpty: rows('bottom_right'),
      tlEmpty: rows('top_left'),
      addScores: texVec(ADDITIVE_DEMO.severe, 2),
      addLogits: texVec(row(add.logits, 0), 0),
      addWeights: texVec(row(add.weights, 0), 2),
      mildScores: texVec(ADDITIVE_DEMO.mild, 2),
      mildWeights: texVec(row(mild.weights, 0), 2),
    };
  },
  render(ctx, view) {
    view.section('c5-check').append(quiz('c5-quiz', ctx.t.quiz));
    const store = ctx.state(makeSpec(), (v) => (v.head > v.heads ? { ...v, head: v.heads } : v));
    view.section('c5-structure').append(maskFigure(ctx, store));
    view.section('c5-alibi').append(alibiFigure(ctx, store));
    view.section('c5-t5').append(t5Figure(ctx, store));
    view.section('c5-graph').append(graphFigure(ctx, store));
    view.section('c5-softcap').append(softcapFigure(ctx, store));
    view.section('c5-empty').append(precisionFigure(ctx, store));
  },
});
