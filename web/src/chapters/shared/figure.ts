/**
 * The frame every figure sits in: a title, a reset button, an export menu (PNG, SVG of the
 * charts; CSV, JSON of the data), the figure's body (controls and charts, added by the
 * chapter) and a caption that says what to notice.
 *
 *   const fig = new FigureFrame(ctx.cat, {
 *     id: 'figure-c2-grid', title: t.fig.title, caption: t.fig.caption,
 *     onReset: () => store.reset(),
 *     charts: () => [{ title: 'Weights', parts: heatmap.parts() }],
 *     data: () => matricesTable([['weights', r.weights]]),
 *   });
 *   fig.body.append(controls, charts);   view.section('c2-grid').append(fig.el);
 *
 * Test ids inside: reset, export (the menu button), export-png, export-svg, export-csv,
 * export-json, export-error. Files are named qkscope-<id>.<ext>.
 */
import { type Catalog, fill } from '../../i18n';
import { type FigureData, type SvgSource, composeSvg, download, svgToPng, toCsv, toJson } from '../../charts/export';
import { rich } from './rich';
import { h, testId } from './dom';
import './figure.css';

export interface FigureFrameOptions {
  /** Unique on the page; the element's id and test id (e.g. "figure-c2-grid"). */
  id: string;
  /** Plain text title ("Figure 2.1. ..."). */
  title: string;
  /** Rich markup (see rich.ts); shown after the bold "What to notice." */
  caption: string;
  /** Puts the figure's controls back to their defaults. */
  onReset: () => void;
  /** The charts to draw into PNG / SVG, in order. */
  charts: () => SvgSource[];
  /** The figure's data for CSV / JSON. */
  data: () => FigureData;
}

type Format = 'png' | 'svg' | 'csv' | 'json';
const FORMATS: readonly Format[] = ['png', 'svg', 'csv', 'json'];

export class FigureFrame {
  readonly el: HTMLElement;
  /** Where the chapter puts the figure's controls and charts. */
  readonly body: HTMLDivElement;
  readonly resetButton: HTMLButtonElement;
  private readonly menu: HTMLDivElement;
  private readonly menuButton: HTMLButtonElement;
  private readonly error: HTMLParagraphElement;

  constructor(private readonly cat: Catalog, private readonly opts: FigureFrameOptions) {
    const c = cat.common;
    const titleId = `${opts.id}-title`;
    this.resetButton = testId(h('button', { type: 'button', className: 'reset', textContent: c.reset }), 'reset');
    this.resetButton.setAttribute('aria-describedby', titleId);
    this.resetButton.addEventListener('click', () => opts.onReset());

    // Export menu: a disclosure button and a list of format buttons (Escape closes it).
    const menuId = `${opts.id}-export-menu`;
    this.menuButton = testId(h('button', { type: 'button', className: 'export-button', textContent: c.export }), 'export');
    this.menuButton.setAttribute('aria-expanded', 'false');
    this.menuButton.setAttribute('aria-controls', menuId);
    this.menuButton.setAttribute('aria-haspopup', 'true');
    this.menu = h('div', { className: 'export-menu', id: menuId, hidden: true });
    this.menu.setAttribute('role', 'group');
    this.menu.setAttribute('aria-label', fill(c.exportMenu, { title: opts.title }));
    const labels: Record<Format, string> = { png: c.exportPng, svg: c.exportSvg, csv: c.exportCsv, json: c.exportJson };
    for (const f of FORMATS) {
      const b = testId(h('button', { type: 'button', textContent: labels[f] }), `export-${f}`);
      b.addEventListener('click', () => void this.export(f));
      this.menu.append(b);
    }
    this.menuButton.addEventListener('click', () => this.toggle());
    const exportBox = h('div', { className: 'export' }, this.menuButton, this.menu);
    exportBox.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape' && !this.menu.hidden) {
        this.toggle(false);
        this.menuButton.focus();
      }
    });
    exportBox.addEventListener('focusout', (ev) => {
      if (!exportBox.contains(ev.relatedTarget as Node | null) && ev.relatedTarget) this.toggle(false);
    });
    this.error = testId(h('p', { className: 'export-error', hidden: true }), 'export-error');
    this.error.setAttribute('role', 'alert');

    this.body = h('div', { className: 'figure-body' });
    const caption = h('figcaption');
    caption.innerHTML = rich(`**${c.whatToNotice}** ${opts.caption}`);
    this.el = testId(h('figure', { className: 'figure', id: opts.id }), opts.id);
    this.el.setAttribute('aria-labelledby', titleId);
    this.el.append(
      h('div', { className: 'figure-head' },
        h('p', { className: 'figure-title', id: titleId, textContent: opts.title }),
        h('div', { className: 'figure-actions' }, exportBox, this.resetButton)),
      this.error,
      this.body,
      caption,
    );
  }

  private toggle(open = this.menu.hidden): void {
    this.menu.hidden = !open;
    this.menuButton.setAttribute('aria-expanded', String(open));
    if (open) this.menu.querySelector('button')?.focus();
  }

  /** Exports the figure in one format (also callable from code and tests). */
  async export(format: Format): Promise<void> {
    const name = `qkscope-${this.opts.id.replace(/^figure-/, '')}`;
    this.error.hidden = true;
    try {
      if (format === 'csv') download(new Blob([toCsv(this.opts.data())], { type: 'text/csv;charset=utf-8' }), `${name}.csv`);
      else if (format === 'json') {
        const d = this.opts.data();
        const body = { figure: this.opts.id, title: this.opts.title, url: location.href, data: d.json ?? { columns: d.columns, rows: d.rows } };
        download(new Blob([toJson(body)], { type: 'application/json' }), `${name}.json`);
      } else {
        const { svg, width, height } = composeSvg(this.opts.charts(), { title: this.opts.title });
        if (format === 'svg') download(new Blob([svg], { type: 'image/svg+xml' }), `${name}.svg`);
        else download(await svgToPng(svg, width, height), `${name}.png`);
      }
      this.toggle(false);
      this.menuButton.focus();
    } catch (e) {
      this.error.textContent = fill(this.cat.common.exportFailed, { message: e instanceof Error ? e.message : String(e) });
      this.error.hidden = false;
    }
  }
}
