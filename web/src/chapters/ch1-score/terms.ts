/**
 * Distill-style linked terms for Figure 1.1: each term of the worked example's formulas
 * ($S$, $s_1$, $w_1$, $w_{11}$, $W$, $o_1$, $O$) is a button; pointing at it or focusing it
 * outlines the cells of the figure it names. The figure is found by its heatmaps' test ids,
 * so it needs no change: cells are d3-joined by key, and the class stays on them between draws.
 */
import { h, testId } from '../shared/dom';
import { tex } from '../shared/rich';
import type { Ch1Text } from './en';

interface Term {
  tex: string;
  /** Test id of the heatmap. */
  map: 'heatmap-scores' | 'heatmap-weights' | 'output-matrix';
  /** Row (0-based) or all rows; column or all columns. */
  row?: number;
  col?: number;
  key: keyof Ch1Text['terms']['names'];
}

const TERMS: readonly Term[] = [
  { tex: 'S', map: 'heatmap-scores', key: 'S' },
  { tex: 's_1', map: 'heatmap-scores', row: 0, key: 's1' },
  { tex: 'W', map: 'heatmap-weights', key: 'W' },
  { tex: 'w_1', map: 'heatmap-weights', row: 0, key: 'w1' },
  { tex: 'w_{13}', map: 'heatmap-weights', row: 0, col: 2, key: 'w13' },
  { tex: 'O', map: 'output-matrix', key: 'O' },
  { tex: 'o_1', map: 'output-matrix', row: 0, key: 'o1' },
];

const HIT = 'c1-term-hit';

export function termLinks(t: Ch1Text['terms'], figure: HTMLElement): HTMLElement {
  const cells = (term: Term) => {
    const sel = `[data-testid="${term.map}"] g.cell` + (term.row !== undefined ? `[data-i="${term.row}"]` : '') + (term.col !== undefined ? `[data-j="${term.col}"]` : '');
    return [...figure.querySelectorAll<SVGGElement>(sel)];
  };
  const clear = () => figure.querySelectorAll(`.${HIT}`).forEach((c) => c.classList.remove(HIT));
  const buttons = TERMS.map((term) => {
    const b = testId(h('button', { type: 'button', className: 'c1-term' }), `c1-term-${term.key}`);
    const name = t.names[term.key];
    // The visible term (KaTeX, read through its MathML) plus what it names, for screen readers.
    b.innerHTML = tex(term.tex);
    b.append(h('span', { className: 'sr-only', textContent: `: ${name}` }));
    b.title = name;
    const on = () => {
      clear();
      cells(term).forEach((c) => c.classList.add(HIT));
    };
    b.addEventListener('pointerenter', on);
    b.addEventListener('focus', on);
    b.addEventListener('click', on);
    b.addEventListener('pointerleave', () => document.activeElement !== b && clear());
    b.addEventListener('blur', clear);
    return b;
  });
  const box = testId(h('div', { className: 'c1-terms' }, h('span', { className: 'c1-terms-lead', textContent: t.lead }), ...buttons), 'c1-terms');
  box.setAttribute('role', 'group');
  box.setAttribute('aria-label', t.lead);
  return box;
}
