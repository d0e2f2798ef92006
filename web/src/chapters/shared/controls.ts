/**
 * Form controls bound to one field of a Store: they show the store's value, write changes
 * back (the store validates and clamps, and updates the URL), and follow changes made
 * elsewhere (reset, URL). Every control has a visible label and a test id; labels may use
 * the small notation of charts/label.ts ("Queries L_q" shows a real subscript).
 *
 *   slider(store, 'alpha', { id: 'c2-alpha', label: t.alpha, min: 0, max: 1, step: 0.01 })
 *   select(store, 'score', { id: 'c2-a', label: t.a, options: [['dot', 'Dot'], ...] })
 *   checkbox(store, 'causal', { id: 'c5-causal', label: t.causal })
 *   radios(store, 'view', { id: 'c2-view', label: t.view, options: [['weights', 'Weights'], ...] })
 *   controlGroup(cat.common.controls, slider(...), select(...))   // the row of controls above a figure
 */
import type { FieldSpecs, ValuesOf } from '../../model/url-state';
import type { Store } from './store';
import { flushUrl } from './url';
import { h, testId } from './dom';
import { labelNodes } from '../../charts/label';
import './controls.css';

/** A figure's row of controls: one labelled group (role=group) for assistive technology. */
export function controlGroup(label: string, ...controls: HTMLElement[]): HTMLDivElement {
  const box = h('div', { className: 'controls' }, ...controls);
  box.setAttribute('role', 'group');
  box.setAttribute('aria-label', label);
  return box;
}

type KeysOfType<V, T> = { [K in keyof V]: V[K] extends T ? K : never }[keyof V] & string;

interface Base {
  /** Element id, unique on the page; also the test id unless `testid` is given. */
  id: string;
  label: string;
  hint?: string;
  testid?: string;
}

function wrap(opts: Base, input: HTMLElement, out?: HTMLOutputElement): HTMLDivElement {
  const label = h('label', { htmlFor: opts.id }, h('span', {}, ...labelNodes(opts.label)));
  if (out) label.append(out);
  const box = h('div', { className: 'control' }, label, input);
  if (opts.hint) {
    const hint = h('p', { className: 'hint', id: `${opts.id}-hint`, textContent: opts.hint });
    input.setAttribute('aria-describedby', hint.id);
    box.append(hint);
  }
  return box;
}

/**
 * A range input. `scale: 'log'` moves in equal ratios (the slider holds log10 of the value,
 * `step` is then in decades). `format` writes the value next to the label. A `max` given
 * as a function follows other fields (e.g. valid keys up to L_k): the control then
 * refreshes on every change of the store.
 */
export function slider<S extends FieldSpecs>(
  store: Store<S>,
  key: KeysOfType<ValuesOf<S>, number>,
  opts: Base & { min: number; max: number | (() => number); step: number; scale?: 'linear' | 'log'; format?: (v: number) => string },
): HTMLDivElement {
  const log = opts.scale === 'log';
  const toPos = (v: number) => (log ? Math.log10(v) : v);
  const max = typeof opts.max === 'function' ? opts.max : () => opts.max as number;
  const input = testId(h('input', { type: 'range', id: opts.id, min: String(toPos(opts.min)), step: String(opts.step) }), opts.testid ?? opts.id);
  const out = h('output', {});
  out.setAttribute('for', opts.id);
  const fmt = opts.format ?? ((v: number) => String(v));
  const show = () => {
    const v = store.get()[key] as number;
    input.max = String(toPos(max()));
    if (document.activeElement !== input) input.value = String(toPos(v));
    out.textContent = fmt(v);
    input.setAttribute('aria-valuetext', fmt(v));
  };
  input.addEventListener('input', () => {
    const p = Number(input.value);
    const v = log ? Number((10 ** p).toPrecision(3)) : p;
    store.set({ [key]: v } as Partial<ValuesOf<S>>, { defer: true });
    show();
  });
  // The drag (or key press) ended: the address shows the value now.
  input.addEventListener('change', flushUrl);
  store.on((_, changed) => (changed.has(key) || typeof opts.max === 'function') && show());
  show();
  return wrap(opts, input, out);
}

/** A drop-down of [value, label] options. */
export function select<S extends FieldSpecs>(
  store: Store<S>,
  key: KeysOfType<ValuesOf<S>, string>,
  opts: Base & { options: readonly (readonly [string, string])[] },
): HTMLDivElement {
  const sel = testId(h('select', { id: opts.id }), opts.testid ?? opts.id);
  for (const [value, text] of opts.options) sel.append(h('option', { value, textContent: text }));
  const show = () => (sel.value = store.get()[key] as string);
  sel.addEventListener('change', () => store.set({ [key]: sel.value } as Partial<ValuesOf<S>>));
  store.on((_, changed) => changed.has(key) && show());
  show();
  return wrap(opts, sel);
}

/** A checkbox with its label to the right. */
export function checkbox<S extends FieldSpecs>(store: Store<S>, key: KeysOfType<ValuesOf<S>, boolean>, opts: Base): HTMLDivElement {
  const input = testId(h('input', { type: 'checkbox', id: opts.id }), opts.testid ?? opts.id);
  const show = () => (input.checked = store.get()[key] as boolean);
  input.addEventListener('change', () => store.set({ [key]: input.checked } as Partial<ValuesOf<S>>));
  store.on((_, changed) => changed.has(key) && show());
  show();
  const box = h('div', { className: 'control' }, h('label', { className: 'check', htmlFor: opts.id }, input, ' ', ...labelNodes(opts.label)));
  if (opts.hint) {
    const hint = h('p', { className: 'hint', id: `${opts.id}-hint`, textContent: opts.hint });
    input.setAttribute('aria-describedby', hint.id);
    box.append(hint);
  }
  return box;
}

/** A group of radio buttons (a segmented control); each radio's test id is `<testid>-<value>`. */
export function radios<S extends FieldSpecs>(
  store: Store<S>,
  key: KeysOfType<ValuesOf<S>, string>,
  opts: Base & { options: readonly (readonly [string, string])[] },
): HTMLFieldSetElement {
  const box = testId(h('fieldset', { className: 'control radios', id: opts.id }), opts.testid ?? opts.id);
  box.append(h('legend', {}, ...labelNodes(opts.label)));
  const inputs = opts.options.map(([value, text]) => {
    const input = testId(h('input', { type: 'radio', name: opts.id, value, id: `${opts.id}-${value}` }), `${opts.testid ?? opts.id}-${value}`);
    input.addEventListener('change', () => input.checked && store.set({ [key]: value } as Partial<ValuesOf<S>>));
    box.append(h('label', { htmlFor: input.id }, input, h('span', {}, ...labelNodes(text))));
    return input;
  });
  const show = () => inputs.forEach((i) => (i.checked = i.value === store.get()[key]));
  store.on((_, changed) => changed.has(key) && show());
  show();
  if (opts.hint) box.append(h('p', { className: 'hint', textContent: opts.hint }));
  return box;
}

/** An integer input (e.g. a seed); invalid text is flagged and not applied. */
export function integer<S extends FieldSpecs>(
  store: Store<S>,
  key: KeysOfType<ValuesOf<S>, number>,
  opts: Base & { min: number; max: number },
): HTMLDivElement {
  const input = testId(h('input', { type: 'number', id: opts.id, min: String(opts.min), max: String(opts.max), step: '1', inputMode: 'numeric' }), opts.testid ?? opts.id);
  const show = () => {
    if (document.activeElement !== input) input.value = String(store.get()[key]);
    input.removeAttribute('aria-invalid');
  };
  input.addEventListener('input', () => {
    const x = Number(input.value);
    const ok = input.value.trim() !== '' && Number.isInteger(x) && x >= opts.min && x <= opts.max;
    if (ok) store.set({ [key]: x } as Partial<ValuesOf<S>>);
    if (ok) input.removeAttribute('aria-invalid');
    else input.setAttribute('aria-invalid', 'true');
  });
  input.addEventListener('change', () => {
    input.value = String(store.get()[key]);
    input.removeAttribute('aria-invalid');
  });
  store.on((_, changed) => changed.has(key) && show());
  show();
  return wrap(opts, input);
}
