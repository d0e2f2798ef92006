/**
 * The ablation's settings (Figure 11.1's controls), bound to the chapter's Store: task and
 * normalizer from their registries, one checkbox per registered scoring function, and the
 * numbers. Steps and learning rate are typed fields that reject bad entries with a message
 * (the learning rate through the core's own check, so its RangeError text is what the reader
 * sees, in the page's language: i18n/core-errors.ts) and never reach the store until valid.
 */
import { fill } from '../../i18n';
import { coreMessage } from '../../i18n/core-errors';
import { controlGroup, checkbox, integer, select } from '../shared/controls';
import { h, testId } from '../shared/dom';
import type { Store } from '../shared/store';
import type { ChapterContext } from '../types';
import type { TaskInfo } from '@qkscope/wasm';
import { type Ch11Spec, HEADS, LR_MAX, LR_MIN, MAX_STEPS, parseRate, trainerOptions } from './model';
import type { TrainBackend } from './runner';
import type { Ch11Text } from './en';

type Ctx = ChapterContext<Ch11Text>;

export function scoreLabel(ctx: Ctx, name: string): string {
  return ctx.cat.scoreLabels[name] ?? ctx.qk.scoreFunctions.find((f) => f.name === name)?.label ?? name;
}

/** A typed field with an inline error (role=alert); `check` answers null when the text is valid. */
function typed(id: string, label: string, hint: string, initial: string, check: (text: string) => Promise<string | null>, onValid: (text: string) => void) {
  const input = testId(h('input', { type: 'text', id, value: initial, inputMode: 'decimal', autocomplete: 'off', spellcheck: false }), id);
  const error = testId(h('p', { className: 'c11-error', id: `${id}-error`, hidden: true }), `${id}-error`);
  error.setAttribute('role', 'alert');
  const hintEl = h('p', { className: 'hint', id: `${id}-hint`, textContent: hint });
  input.setAttribute('aria-describedby', `${hintEl.id} ${error.id}`);
  let generation = 0;
  let valid = true;
  const validate = async () => {
    const my = ++generation;
    const message = await check(input.value);
    if (my !== generation) return;
    valid = message === null;
    error.hidden = valid;
    error.textContent = message ?? '';
    if (valid) input.removeAttribute('aria-invalid');
    else input.setAttribute('aria-invalid', 'true');
    if (valid) onValid(input.value);
    input.dispatchEvent(new CustomEvent('c11-validity', { bubbles: true }));
  };
  input.addEventListener('input', () => void validate());
  const el = h('div', { className: 'control' }, h('label', { htmlFor: id, textContent: label }), input, hintEl, error);
  return {
    el, input,
    isValid: () => valid,
    show: (text: string) => {
      if (document.activeElement !== input && valid) input.value = text;
    },
    /** Back to the store's value, error cleared. */
    reset: (text: string) => {
      generation++;
      input.value = text;
      valid = true;
      error.hidden = true;
      input.removeAttribute('aria-invalid');
    },
  };
}

export interface Settings {
  el: HTMLElement;
  /** False while a typed field holds a rejected entry. */
  valid(): boolean;
  /** Typed fields back to the store's values (after a reset). */
  reset(): void;
}

export function settingsControls(ctx: Ctx, store: Store<Ch11Spec>, tasks: readonly TaskInfo[], backend: TrainBackend): Settings {
  const t = ctx.t.fig;
  const taskLabel = (x: TaskInfo) => t.tasks[x.name as keyof typeof t.tasks] ?? x.label;
  const scores = ctx.qk.scoreFunctions.map((f) => f.name);

  // One checkbox per registered scoring function; at least one stays checked.
  const box = testId(h('fieldset', { className: 'control c11-scores', id: 'c11-scores' }), 'c11-scores');
  box.append(h('legend', { textContent: t.scores }));
  const boxes = scores.map((name) => {
    const input = testId(h('input', { type: 'checkbox', id: `c11-score-${name}`, value: name }), `c11-score-${name}`);
    input.addEventListener('change', () => {
      const chosen = boxes.filter((b) => b.checked).map((b) => b.value);
      if (chosen.length === 0) input.checked = true;
      else store.set({ scores: chosen });
    });
    box.append(h('label', { className: 'check', htmlFor: input.id }, input, ' ', scoreLabel(ctx, name)));
    return input;
  });
  const showScores = () => boxes.forEach((b) => (b.checked = store.get().scores.includes(b.value)));
  box.append(h('p', { className: 'hint', textContent: t.scoresHint }));

  const steps = typed('c11-steps', t.steps, fill(t.stepsHint, { max: MAX_STEPS }), String(store.get().steps), async (text) => {
    const n = Number(text.trim());
    return text.trim() !== '' && Number.isInteger(n) && n >= 1 && n <= MAX_STEPS ? null : fill(t.stepsError, { max: MAX_STEPS, got: text.trim() || '""' });
  }, (text) => store.set({ steps: Number(text.trim()) }));

  // The core decides what a learning rate may be: the worker builds a trainer with the entry
  // (and frees it), so its RangeError is what the reader reads.
  const lr = typed('c11-lr', t.lr, t.lrHint, String(store.get().lr), async (text) => {
    const rate = parseRate(text);
    // Outside the page's range the store would clamp the rate (1e300 trained at 1e9 while the
    // field still said 1e300). A rate the core rejects (NaN, <= 0, inf) gets the core's message.
    const outside = Number.isFinite(rate) && rate > 0 && (rate < LR_MIN || rate > LR_MAX);
    const sci = (x: number) => x.toExponential().replace('+', '');
    if (outside) return fill(t.lrRange, { min: sci(LR_MIN), max: sci(LR_MAX), got: text.trim() });
    try {
      await backend.train({ op: 'check', options: { ...trainerOptions(store.get(), 'scaled_dot', rate), evalSize: 1, batch: 1 } }, 'c11-check');
      return null;
    } catch (e) {
      if ((e as Error).name === 'AbortError') return null;
      return coreMessage(ctx.lang, e);
    }
  }, (text) => store.set({ lr: parseRate(text) }));

  const controls = controlGroup(ctx.cat.common.controls,
    select(store, 'task', { id: 'c11-task', label: t.task, options: tasks.map((x) => [x.name, taskLabel(x)]) }),
    box,
    select(store, 'normalizer', { id: 'c11-normalizer', label: t.normalizer, options: ctx.qk.normalizers.map((n) => [n.name, t.normalizerNames[n.name as keyof typeof t.normalizerNames] ?? n.label]) }),
    checkbox(store, 'causal', { id: 'c11-causal', label: t.causal }),
    integer(store, 'seed', { id: 'c11-seed', label: ctx.cat.common.seed, min: 0, max: 999999 }),
    steps.el,
    lr.el,
    integer(store, 'length', { id: 'c11-length', label: t.length, min: 3, max: 16 }),
    integer(store, 'layers', { id: 'c11-layers', label: t.layers, min: 1, max: 4 }),
    select(store, 'heads', { id: 'c11-heads', label: t.heads, options: HEADS.map((n) => [n, n]) }),
  );
  controls.classList.add('c11-controls');

  store.on((v, changed) => {
    if (changed.has('scores')) showScores();
    if (changed.has('steps')) steps.show(String(v.steps));
    if (changed.has('lr')) lr.show(String(v.lr));
  });
  showScores();
  return {
    el: controls,
    valid: () => steps.isValid() && lr.isValid(),
    reset: () => {
      steps.reset(String(store.get().steps));
      lr.reset(String(store.get().lr));
    },
  };
}
