/**
 * Chapter 2, "The scoring functions side by side": every scoring function of the core's
 * registry on one shared Q, K, V. Figure 2.1 shows them all at once,
 * Figure 2.2 the difference between any two. State in the URL under "c2.".
 * Default inputs: key 3 is twice key 1, so dot product and cosine disagree about it.
 */
import type { QkScope } from '@qkscope/wasm';
import { resize, row } from '../../model/matrix';
import { tex, texRow } from '../../model/format';
import type { Vars } from '../shared/rich';
import { defineChapter } from '../types';
import { quiz } from '../shared/quiz';
import { columnSpread, DEFAULT_K, DEFAULT_Q, DEFAULT_V, makeSpec, runAll } from './model';
import { differenceView, sideBySide } from './figures';
import { en, type Ch2Text } from './en';
import { zh } from './zh';
import './style.css';

/** Live numbers for the prose, on the default inputs. */
function vars(qk: QkScope): Vars {
  const out = runAll(qk, { q: DEFAULT_Q, k: DEFAULT_K, v: DEFAULT_V, alpha: 0, dh: 4, seed: 0 });
  const get = (n: string) => out.find((o) => o.name === n)?.result;
  const dot = get('dot');
  const cos = get('cosine');
  const lc = get('linear_concat');
  const bil = get('bilinear');
  const dotRow = dot ? row(dot.rawScores, 0) : [];
  const cosRow = cos ? row(cos.rawScores, 0) : [];
  let bilDiff = 0;
  if (dot && bil) for (let i = 0; i < dot.weights.data.length; i++) bilDiff = Math.max(bilDiff, Math.abs(dot.weights.data[i]! - bil.weights.data[i]!));
  return {
    dot1: tex(dotRow[0] ?? NaN, 2, true),
    dot3: tex(dotRow[2] ?? NaN, 2, true),
    cos1: tex(cosRow[0] ?? NaN, 4, true),
    cos3: tex(cosRow[2] ?? NaN, 4, true),
    dotW: dot ? texRow(row(dot.weights, 0), 3) : '?',
    cosW: cos ? texRow(row(cos.weights, 0), 3) : '?',
    lcSpread: lc ? tex(columnSpread(lc.weights), 6, true) : '?',
    lcRow: lc ? texRow(row(lc.weights, 0), 3) : '?',
    bilDiff: tex(bilDiff, 6, true),
    alpha0: String(makeSpec([]).alpha.default),
  };
}

export default defineChapter<Ch2Text>({
  id: 'ch2',
  ns: 'c2',
  text: { en, zh },
  vars: (ctx) => vars(ctx.qk),
  render(ctx, view) {
    view.section('c2-check').append(quiz('c2-quiz', ctx.t.quiz));
    const names = ctx.qk.scoreFunctions.map((f) => f.name);
    // V needs one row per key: it follows K's row count.
    const store = ctx.state(makeSpec(names), (v) => (v.v.length === v.k.length ? v : { ...v, v: resize(v.v, v.k.length, v.v[0]!.length) }));
    view.section('c2-side-by-side').append(sideBySide(ctx, store));
    view.section('c2-differences').append(differenceView(ctx, store));
  },
});
