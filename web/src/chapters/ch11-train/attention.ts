/**
 * The attention maps of Figure 11.1: for the chosen held-out example, layer and head, one
 * heatmap per trained scoring function (row i: query position i, column j: key position j,
 * Trainer.attention of wasm/types/train.d.ts), redrawn only when a run brings a new map. The
 * example's tokens and answer targets are printed under each map. A run whose map is not
 * finite shows its divergence message instead of a map.
 */
import { fill } from '../../i18n';
import { coreMessage } from '../../i18n/core-errors';
import { Heatmap } from '../../charts/heatmap';
import type { SvgSource } from '../../charts/export';
import { controlGroup, integer } from '../shared/controls';
import { h, testId } from '../shared/dom';
import type { Store } from '../shared/store';
import type { ChapterContext } from '../types';
import type { TrainProgress, TrainView } from '../../worker/protocol';
import { type Ch11Spec, EVAL_SIZE } from './model';
import type { TrainSession } from './runner';
import { scoreLabel } from './settings';
import type { Ch11Text } from './en';

interface Panel {
  score: string;
  box: HTMLElement;
  map: Heatmap;
  tokens: HTMLElement;
  note: HTMLElement;
  drawn: TrainProgress | null;
}

export class AttentionPanels {
  readonly el: HTMLElement;
  /** Called when the reader picks another example, layer or head. */
  onView: (view: TrainView) => void = () => undefined;
  private readonly grid: HTMLElement;
  private panels: Panel[] = [];

  constructor(private readonly ctx: ChapterContext<Ch11Text>, private readonly store: Store<Ch11Spec>) {
    const t = ctx.t.fig;
    const controls = controlGroup(t.viewControls,
      integer(store, 'example', { id: 'c11-example', label: fill(t.example, { max: EVAL_SIZE - 1 }), min: 0, max: EVAL_SIZE - 1 }),
      integer(store, 'layer', { id: 'c11-layer', label: t.layer, min: 1, max: 4 }),
      integer(store, 'head', { id: 'c11-head', label: t.head, min: 1, max: 4 }),
    );
    this.grid = h('div', { className: 'c11-maps' });
    this.el = testId(h('div', { className: 'c11-attention', hidden: true }, h('h3', { textContent: t.mapsTitle }), h('p', { className: 'hint', textContent: t.mapsHint }), controls, this.grid), 'c11-attention');
    store.on((_, changed) => {
      if (changed.has('example') || changed.has('layer') || changed.has('head')) this.onView(this.view());
    });
  }

  /** The viewed map as Trainer.attention's 0-based arguments. */
  view(): TrainView {
    const v = this.store.get();
    return { example: v.example, layer: v.layer - 1, head: v.head - 1 };
  }

  prepare(s: TrainSession): void {
    this.panels = s.runs.map((r) => {
      const map = new Heatmap(`c11-attn-${r.score}`);
      const tokens = testId(h('p', { className: 'hint c11-tokens' }), `c11-tokens-${r.score}`);
      const note = testId(h('p', { className: 'c11-error', hidden: true }), `c11-note-${r.score}`);
      const box = testId(h('div', { className: 'panel' }, h('h4', { textContent: scoreLabel(this.ctx, r.score) }), map.el, tokens, note), `c11-panel-${r.score}`);
      return { score: r.score, box, map, tokens, note, drawn: null };
    });
    this.grid.replaceChildren(...this.panels.map((p) => p.box));
    this.el.hidden = false;
  }

  update(s: TrainSession): void {
    const t = this.ctx.t.fig;
    const c = this.ctx.cat.common;
    s.runs.forEach((r, k) => {
      const p = this.panels[k];
      if (!p || !r.last || p.drawn === r.last) return;
      p.drawn = r.last;
      const a = r.last.attention;
      const finite = a !== null && a.data.every(Number.isFinite);
      p.note.hidden = !r.diverged && finite;
      p.note.textContent = r.diverged ? fill(t.divergedNote, { message: r.message ? coreMessage(this.ctx.lang, r.message) : t.notFinite })
        : finite ? '' : fill(t.noMap, { message: coreMessage(this.ctx.lang, r.last.attentionError || t.notFinite) });
      p.map.el.hidden = !finite;
      if (a && finite) {
        p.map.update({
          values: a, palette: 'unit', decimals: 2, rowAxis: c.axisQuery, colAxis: c.axisKey,
          label: fill(t.mapLabel, { name: scoreLabel(this.ctx, r.score), steps: r.steps }),
          cellLabel: (i, j, value) => fill(c.cellLabel, { row: c.axisQuery, i, col: c.axisKey, j, value }),
          maskedText: c.maskedCell, legendTitle: c.legendWeight,
        });
      }
      const tok = Array.from(r.last.tokens, String).join(' ');
      const tgt = Array.from(r.last.targets, (x) => (x < 0 ? '·' : String(x))).join(' ');
      p.tokens.textContent = fill(t.tokens, { tokens: tok, targets: tgt, steps: r.steps });
    });
  }

  clear(): void {
    this.panels = [];
    this.grid.replaceChildren();
    this.el.hidden = true;
  }

  charts(): SvgSource[] {
    return this.panels.filter((p) => p.drawn && !p.map.el.hidden).map((p) => ({ title: scoreLabel(this.ctx, p.score), parts: p.map.parts() }));
  }
}
