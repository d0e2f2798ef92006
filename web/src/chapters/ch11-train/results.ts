/**
 * The results table of Figure 11.1, one row per scoring function: steps to 95 % held-out
 * token accuracy (the first evaluation that reached it, or "–"), the last held-out loss and
 * token accuracy, and the mean time of one optimizer step in the worker. A diverged run's row
 * says so with the core's message. Cells are created once per session and their text updated.
 */
import { fill } from '../../i18n';
import { coreMessage } from '../../i18n/core-errors';
import { fixed, sig } from '../../model/format';
import { h, testId } from '../shared/dom';
import type { ChapterContext } from '../types';
import { stepsToTarget } from './model';
import type { TrainSession } from './runner';
import { scoreLabel } from './settings';
import type { Ch11Text } from './en';

const COLUMNS = ['to95', 'loss', 'acc', 'ms', 'state'] as const;

export class ResultsTable {
  readonly el: HTMLElement;
  private readonly body: HTMLTableSectionElement;
  private cells: Record<(typeof COLUMNS)[number], HTMLTableCellElement>[] = [];

  constructor(private readonly ctx: ChapterContext<Ch11Text>) {
    const t = ctx.t.fig;
    const head = h('tr', {}, h('th', { scope: 'col', textContent: t.colScore }),
      ...[t.colTo95, t.colLoss, t.colAcc, t.colMs, t.colState].map((x) => h('th', { scope: 'col', textContent: x })));
    this.body = h('tbody');
    const table = testId(h('table', { className: 'row-stats c11-results' }, h('caption', { className: 'sr-only', textContent: t.resultsTitle }), h('thead', {}, head), this.body), 'c11-results');
    this.el = h('div', { className: 'c11-results-box', hidden: true }, h('h3', { textContent: t.resultsTitle }),
      h('div', { className: 'table-scroll', tabIndex: 0 }, table), h('p', { className: 'hint', textContent: t.resultsHint }));
    this.el.querySelector('.table-scroll')!.setAttribute('aria-label', t.resultsTitle);
  }

  prepare(s: TrainSession): void {
    this.cells = [];
    this.body.replaceChildren(...s.runs.map((r) => {
      const c = Object.fromEntries(COLUMNS.map((k) => [k, h('td', { textContent: '–' })])) as (typeof this.cells)[number];
      c.state.className = 'c11-state';
      this.cells.push(c);
      return testId(h('tr', {}, h('th', { scope: 'row', textContent: scoreLabel(this.ctx, r.score) }), ...COLUMNS.map((k) => c[k])), `c11-row-${r.score}`);
    }));
    this.el.hidden = false;
  }

  update(s: TrainSession): void {
    const t = this.ctx.t.fig;
    s.runs.forEach((r, k) => {
      const c = this.cells[k];
      if (!c) return;
      const last = r.evals.at(-1);
      const to95 = stepsToTarget(r.evals);
      set(c.to95, to95 === null ? '–' : String(to95));
      set(c.loss, last ? (Math.abs(last.loss) < 1000 ? fixed(last.loss, 3) : sig(last.loss, 3)) : '–');
      set(c.acc, last ? fixed(last.tokenAccuracy, 3) : '–');
      set(c.ms, r.steps ? sig(r.stepMs / r.steps, 2) : '–');
      set(c.state, r.diverged ? fill(t.stateDiverged, { message: r.message ? coreMessage(this.ctx.lang, r.message) : t.notFinite })
        : r.steps >= s.total ? t.stateDone : fill(t.stateSteps, { steps: r.steps, total: s.total }));
      c.state.dataset.diverged = String(r.diverged);
      c.to95.dataset.value = to95 === null ? '' : String(to95);
      c.loss.dataset.value = last ? String(last.loss) : '';
      c.acc.dataset.value = last ? String(last.tokenAccuracy) : '';
    });
  }

  clear(): void {
    this.cells = [];
    this.body.replaceChildren();
    this.el.hidden = true;
  }
}

function set(cell: HTMLElement, text: string): void {
  if (cell.textContent !== text) cell.textContent = text;
}
