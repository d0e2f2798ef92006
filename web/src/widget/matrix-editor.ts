/**
 * Editable grid of number inputs for one matrix (Q, K or V), row i = token i.
 * Keeps the DOM across value updates (focus and caret survive recomputation) and
 * rebuilds only when the shape changes. Invalid text is flagged (aria-invalid)
 * and not propagated; on blur the last valid value comes back.
 */
import { type Mat, clone } from '../model/matrix';
import { shortNumber } from '../model/format';
import { MATRIX_LIMITS as LIMITS, clamp } from '../model/url-state';
import './matrix-editor.css';

export interface MatrixEditorOptions {
  /** Short symbol shown in the heading and used in labels, e.g. "Q". */
  symbol: string;
  title: string;
  testId: string;
  /** aria-label of cell (i, j), 1-based. */
  cellLabel: (i: number, j: number) => string;
  invalidText: string;
  onChange: (m: Mat) => void;
}

export class MatrixEditor {
  readonly el: HTMLElement;
  private readonly grid: HTMLDivElement;
  private readonly heading: HTMLElement;
  private value: Mat = [];
  private inputs: HTMLInputElement[][] = [];

  constructor(private readonly opts: MatrixEditorOptions) {
    this.el = document.createElement('fieldset');
    this.el.className = 'matrix-editor';
    this.el.dataset.testid = opts.testId;
    this.heading = document.createElement('legend');
    this.grid = document.createElement('div');
    this.grid.className = 'matrix-grid';
    this.el.append(this.heading, this.grid);
  }

  /** Shows `m`; inputs being edited keep their text. */
  set(m: Mat): void {
    const rows = m.length;
    const cols = m[0]?.length ?? 0;
    this.heading.innerHTML = `${this.opts.title} <span class="shape">${rows} × ${cols}</span>`;
    if (rows !== this.inputs.length || cols !== (this.inputs[0]?.length ?? 0)) this.build(rows, cols);
    this.value = clone(m);
    m.forEach((row, i) =>
      row.forEach((x, j) => {
        const input = this.inputs[i]![j]!;
        // The input being typed into keeps its text ("0." must not become "0").
        if (document.activeElement !== input) {
          input.value = shortNumber(x);
          input.removeAttribute('aria-invalid');
        }
      }),
    );
  }

  private build(rows: number, cols: number): void {
    this.grid.replaceChildren();
    this.grid.style.gridTemplateColumns = `auto repeat(${cols}, 3.1rem)`;
    this.inputs = [];
    for (let i = 0; i < rows; i++) {
      const label = document.createElement('span');
      label.className = 'row-label';
      label.textContent = `${this.opts.symbol.toLowerCase()}${i + 1}`;
      label.setAttribute('aria-hidden', 'true');
      this.grid.append(label);
      const row: HTMLInputElement[] = [];
      for (let j = 0; j < cols; j++) {
        const input = document.createElement('input');
        input.type = 'number';
        input.step = '0.1';
        input.min = String(LIMITS.value.min);
        input.max = String(LIMITS.value.max);
        input.inputMode = 'decimal';
        input.setAttribute('aria-label', this.opts.cellLabel(i + 1, j + 1));
        input.dataset.i = String(i);
        input.dataset.j = String(j);
        input.addEventListener('input', () => this.onInput(input, i, j));
        input.addEventListener('change', () => this.onCommit(input, i, j));
        row.push(input);
        this.grid.append(input);
      }
      this.inputs.push(row);
    }
  }

  private parse(input: HTMLInputElement): number | null {
    if (input.value.trim() === '' || input.validity.badInput) return null;
    const x = Number(input.value);
    return Number.isFinite(x) ? x : null;
  }

  private onInput(input: HTMLInputElement, i: number, j: number): void {
    const x = this.parse(input);
    if (x === null) {
      input.setAttribute('aria-invalid', 'true');
      input.title = this.opts.invalidText;
      return;
    }
    input.removeAttribute('aria-invalid');
    input.removeAttribute('title');
    const next = clone(this.value);
    next[i]![j] = clamp(x, LIMITS.value.min, LIMITS.value.max);
    this.value = next;
    this.opts.onChange(clone(next));
  }

  private onCommit(input: HTMLInputElement, i: number, j: number): void {
    // Show the value actually used (clamped, or the last valid one).
    input.value = shortNumber(this.value[i]![j]!);
    input.removeAttribute('aria-invalid');
    input.removeAttribute('title');
  }
}
