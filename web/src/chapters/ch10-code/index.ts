/**
 * Chapter 10, "From formula to code": the scoring functions, masks and normalizers as
 * PyTorch (./code/*.py, shown as they are and run against the core by
 * tests/wasm/pytorch-snippets.test.mjs), the shape checklist, mask polarity across libraries,
 * two live overflow demos, fp32 scoring under mixed precision, GAT vs GATv2, training advice
 * and checks for understanding. State in the URL under "c10.".
 */
import { defineChapter } from '../types';
import { quiz } from '../shared/quiz';
import { makeSpec } from './model';
import { listing, polarityTable } from './code';
import { maxShiftFigure, overflowFigure } from './figures';
import { gatFigure } from './gat';
import { en, type Ch10Text } from './en';
import { zh } from './zh';
import './style.css';

export default defineChapter<Ch10Text>({
  id: 'ch10',
  ns: 'c10',
  text: { en, zh },
  render(ctx, view) {
    const store = ctx.state(makeSpec());
    view.section('c10-scores').append(listing(ctx.t, 'scores'));
    view.section('c10-masks').append(listing(ctx.t, 'masks'));
    view.section('c10-polarity').append(polarityTable(ctx.t), listing(ctx.t, 'polarity'));
    view.section('c10-normalizers').append(listing(ctx.t, 'normalizers'));
    view.section('c10-maxshift').append(maxShiftFigure(ctx, store));
    view.section('c10-overflow').append(overflowFigure(ctx, store));
    view.section('c10-mixed').append(listing(ctx.t, 'mixed'));
    view.section('c10-gat').append(gatFigure(ctx, store));
    view.section('c10-check').append(quiz('c10-quiz', ctx.t.quiz));
  },
});
