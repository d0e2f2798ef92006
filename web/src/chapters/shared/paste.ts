/**
 * "Bring your own Q, K, V": a collapsible box with a textarea for JSON or CSV, an apply
 * button and an inline error (role=alert, tied to the textarea by aria-describedby and
 * aria-invalid). Parsing lives in model/parse-matrices.ts; messages come from the catalog.
 * Test ids: <id> (the box), <id>-text, <id>-apply, <id>-current, <id>-error, <id>-status.
 */
import { type PasteStrings, fill } from '../../i18n';
import type { Mat } from '../../model/matrix';
import { type PasteError, type PasteLimits, matricesToCsv, parseMatrices } from '../../model/parse-matrices';
import { h, testId } from './dom';
import './paste.css';

export interface PasteOptions {
  /** Unique id prefix on the page, also the test id prefix. */
  id: string;
  limits: PasteLimits;
  /** The matrices now in use (for "fill with the current matrices"). */
  current: () => { q: Mat; k: Mat; v: Mat };
  /** Called with valid matrices (V has as many rows as K). */
  apply: (m: { q: Mat; k: Mat; v: Mat }) => void;
}

/** The sentence for a parse error, in the catalog's language. */
export function pasteMessage(t: PasteStrings, e: PasteError): string {
  const { code, ...vars } = e;
  const v = Object.fromEntries(Object.entries(vars).map(([k, x]) => [k, typeof x === 'number' && !Number.isFinite(x) ? '?' : x as string | number]));
  return fill(t[code], v);
}

export class PasteBox {
  readonly el: HTMLDetailsElement;
  private readonly text: HTMLTextAreaElement;
  private readonly error: HTMLParagraphElement;
  private readonly status: HTMLParagraphElement;

  constructor(private readonly t: PasteStrings, private readonly opts: PasteOptions) {
    const id = opts.id;
    this.text = testId(h('textarea', { id: `${id}-text`, rows: 6, spellcheck: false, autocomplete: 'off' }), `${id}-text`);
    this.text.setAttribute('autocapitalize', 'off');
    this.error = testId(h('p', { className: 'paste-error', id: `${id}-error`, hidden: true }), `${id}-error`);
    this.error.setAttribute('role', 'alert');
    this.status = testId(h('p', { className: 'hint paste-status', id: `${id}-status` }), `${id}-status`);
    this.status.setAttribute('role', 'status');
    this.text.setAttribute('aria-describedby', `${id}-hint ${id}-error`);
    const apply = testId(h('button', { type: 'button', className: 'button primary', textContent: t.apply }), `${id}-apply`);
    const current = testId(h('button', { type: 'button', className: 'button', textContent: t.current }), `${id}-current`);
    apply.addEventListener('click', () => this.apply());
    current.addEventListener('click', () => {
      const m = opts.current();
      this.text.value = matricesToCsv(m.q, m.k, m.v);
      this.clearError();
      this.text.focus();
    });
    this.text.addEventListener('input', () => this.clearError());
    this.text.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        this.apply();
      }
    });
    this.el = testId(h('details', { className: 'paste' }), id);
    this.el.append(
      h('summary', { textContent: t.title }),
      h('p', { className: 'hint', id: `${id}-hint`, textContent: t.hint }),
      h('label', { htmlFor: this.text.id, className: 'paste-label', textContent: t.label }),
      this.text,
      this.error,
      h('div', { className: 'paste-actions' }, apply, current),
      this.status,
    );
  }

  private clearError(): void {
    this.error.hidden = true;
    this.error.textContent = '';
    this.text.removeAttribute('aria-invalid');
  }

  /** Parses the text and applies it, or shows what is wrong. */
  apply(): void {
    const r = parseMatrices(this.text.value, this.opts.limits);
    if (!r.ok) {
      this.error.textContent = pasteMessage(this.t, r.error);
      this.error.hidden = false;
      this.text.setAttribute('aria-invalid', 'true');
      this.status.textContent = '';
      return;
    }
    this.clearError();
    this.opts.apply({ q: r.q, k: r.k, v: r.v });
    this.status.textContent = fill(this.t.applied, { lq: r.q.length, dq: r.q[0]!.length, lk: r.k.length, dk: r.k[0]!.length, dv: r.v[0]!.length });
  }
}
