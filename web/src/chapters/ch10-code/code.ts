/**
 * Chapter 10's listings and tables. The listings are the .py files of ./code, imported as
 * text (Vite's ?raw), so the page shows exactly the code that tests/wasm/pytorch-snippets.test.mjs
 * runs against the core.
 */
import { fill } from '../../i18n';
import { h, testId } from '../shared/dom';
import type { Ch10Text } from './en';
import scoresPy from './code/scores.py?raw';
import masksPy from './code/masks.py?raw';
import normalizersPy from './code/normalizers.py?raw';
import polarityPy from './code/polarity.py?raw';
import mixedPy from './code/mixed_precision.py?raw';

export const LISTINGS = {
  scores: ['scores.py', scoresPy],
  masks: ['masks.py', masksPy],
  normalizers: ['normalizers.py', normalizersPy],
  polarity: ['polarity.py', polarityPy],
  mixed: ['mixed_precision.py', mixedPy],
} as const;

/** A listing: a scrollable, focusable <pre> (keyboard users can scroll it) with its file name. */
export function listing(t: Ch10Text, which: keyof typeof LISTINGS): HTMLElement {
  const [file, text] = LISTINGS[which];
  const path = `web/src/chapters/ch10-code/code/${file}`;
  const pre = h('pre', { className: 'c10-code', tabIndex: 0 }, h('code', { className: 'language-python', textContent: text.trimEnd() }));
  pre.setAttribute('aria-label', fill(t.code.label, { file }));
  return testId(h('figure', { className: 'c10-listing' }, pre, h('figcaption', { textContent: fill(t.code.caption, { file: path }) })), `c10-code-${which}`);
}

/** Text with `code` spans as nodes (text stays text). */
function withCode(text: string): (Node | string)[] {
  return text.split('`').map((part, k) => (k % 2 ? h('code', { textContent: part }) : part));
}

/** A cell that names its column, for the stacked layout of narrow screens (style.css). */
function labelled(td: HTMLElement, column: string): HTMLElement {
  td.dataset.label = column;
  return td;
}

/** The mask-polarity table. */
export function polarityTable(t: Ch10Text): HTMLElement {
  const p = t.polarity;
  const table = testId(h('table', { className: 'c10-table' }), 'c10-polarity');
  table.append(
    h('caption', { textContent: p.caption }),
    h('thead', {}, h('tr', {}, ...[p.colApi, p.colArg, p.colMeaning, p.colShape].map((x) => h('th', { scope: 'col', textContent: x })))),
    h('tbody', {}, ...p.rows.map(([api, arg, meaning, shape]) =>
      h('tr', {}, h('th', { scope: 'row', textContent: api! }), labelled(h('td', {}, h('code', { textContent: arg! })), p.colArg),
        labelled(h('td', {}, ...withCode(meaning!)), p.colMeaning), labelled(h('td', {}, ...withCode(shape!)), p.colShape)))));
  const box = h('div', { className: 'table-scroll', tabIndex: 0 }, table);
  box.setAttribute('role', 'region');
  box.setAttribute('aria-label', p.caption);
  return h('div', { className: 'c10-table-box' }, box);
}
