/**
 * Chapter 1's comparison table of the scoring functions. One row per entry of the core's
 * registry (QkScope.scoreFunctions): its label, KaTeX formula, parameters and whether
 * d_q != d_k is allowed come from the registry; cost, boundedness, query dependence, scaling
 * and use are the catalog's facts per name (docs/facts.md §2, §3, §9). A registry entry the
 * catalog does not describe yet still gets its row, with those cells saying so.
 */
import type { ScoreInfo } from '@qkscope/wasm';
import type { Catalog } from '../../i18n';
import { h, testId } from '../shared/dom';
import { labelNodes } from '../../charts/label';
import { inline, tex } from '../shared/rich';
import type { Ch1Text } from './en';

function html<K extends 'td' | 'th'>(tag: K, markup: string): HTMLElementTagNameMap[K] {
  const c = h(tag, {});
  c.innerHTML = markup;
  return c;
}

export function compareTable(infos: readonly ScoreInfo[], cat: Catalog, t: Ch1Text['compare']): HTMLElement {
  const table = testId(h('table', { className: 'c1-compare' }), 'c1-compare');
  const cols = [t.colName, t.colFormula, t.colParams, t.colCost, t.colDims, t.colBounded, t.colQuery, t.colScale, t.colUse];
  const rows = infos.map((info) => {
    const facts = (t.rows as Record<string, { cost: string; bounded: string; query: string; scale: string; use: string } | undefined>)[info.name];
    const name = h('th', { scope: 'row', textContent: cat.scoreLabels[info.name] ?? info.label });
    const tr = h('tr', {}, name,
      html('td', tex(info.tex.replace(/^f\([^=]*\)=/, ''))),
      html('td', info.params.length ? info.params.map((p) => tex(p)).join(', ') : t.none),
      ...(facts ? [facts.cost] : [t.missing]).map((x) => html('td', inline(x))),
      h('td', { textContent: info.sameDim ? t.no : t.yes }),
      ...(facts ? [facts.bounded, facts.query, facts.scale, facts.use] : [t.missing, t.missing, t.missing, t.missing]).map((x) => html('td', inline(x))));
    tr.dataset.score = info.name;
    tr.dataset.sameDim = String(info.sameDim);
    return tr;
  });
  table.append(
    h('caption', { textContent: t.caption }),
    h('thead', {}, h('tr', {}, ...cols.map((x) => h('th', { scope: 'col' }, ...labelNodes(x))))),
    h('tbody', {}, ...rows));
  const box = h('div', { className: 'table-scroll c1-compare-box', tabIndex: 0 }, table);
  box.setAttribute('role', 'region');
  box.setAttribute('aria-label', t.caption);
  return box;
}
