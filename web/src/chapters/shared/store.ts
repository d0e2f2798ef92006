/**
 * A chapter's control state, bound to the URL: read (validated, clamped) when the chapter
 * renders, written back on every change under the chapter's namespace, and broadcast to
 * listeners. Field tables and parsers live in model/url-state.ts (no DOM).
 *
 *   const store = ctx.state({ tau: num(1, 0.05, 20), causal: bool(false) });
 *   store.on((v) => draw(v));   store.set({ tau: 2 });   store.reset();
 */
import { type FieldSpecs, type ValuesOf, defaults, paramNames, readValues, sanitizePatch, writeEntries } from '../../model/url-state';
import { readQuery, replaceKeys } from './url';

export type Listener<V> = (values: Readonly<V>, changed: ReadonlySet<keyof V>) => void;

export class Store<S extends FieldSpecs> {
  readonly defaults: Readonly<ValuesOf<S>>;
  private values: ValuesOf<S>;
  private readonly listeners: Listener<ValuesOf<S>>[] = [];

  /**
   * @param ns the chapter's URL namespace ("c2" gives keys "c2.<field>"; '' plain "<field>")
   * @param spec the field table
   * @param normalize optional cross-field rule applied after every change (e.g. V has as many rows as K)
   */
  constructor(
    readonly ns: string,
    readonly spec: S,
    private readonly normalize: (v: ValuesOf<S>) => ValuesOf<S> = (v) => v,
  ) {
    if (!/^([a-z][a-z0-9]*)?$/.test(ns)) throw new Error(`state namespace '${ns}' must be lowercase letters and digits`);
    for (const k of Object.keys(spec)) if (!/^[a-zA-Z][a-zA-Z0-9]*$/.test(k)) throw new Error(`state key '${k}' must be alphanumeric`);
    this.defaults = normalize(defaults(spec));
    this.values = normalize(readValues(spec, readQuery(), ns));
  }

  get(): Readonly<ValuesOf<S>> {
    return this.values;
  }

  /**
   * Applies a change (each value sanitized), writes the URL and notifies listeners.
   * `defer`: one of a stream of changes (a dragged slider); the URL is written once the stream rests (url.ts).
   */
  set(patch: Partial<ValuesOf<S>>, { defer = false }: { defer?: boolean } = {}): void {
    const next = this.normalize({ ...this.values, ...sanitizePatch(this.spec, patch) });
    const changed = new Set<keyof ValuesOf<S>>();
    for (const k of Object.keys(this.spec) as (keyof ValuesOf<S>)[])
      if (!this.spec[k as string]!.equals(next[k], this.values[k])) changed.add(k);
    this.values = next;
    if (changed.size === 0) return;
    replaceKeys(paramNames(this.spec, this.ns), writeEntries(this.spec, next, this.ns, this.normalize), defer);
    for (const fn of this.listeners) fn(next, changed);
  }

  /** Back to the defaults (all fields, or the given ones). */
  reset(keys?: (keyof ValuesOf<S>)[]): void {
    const patch: Partial<ValuesOf<S>> = {};
    for (const k of keys ?? (Object.keys(this.spec) as (keyof ValuesOf<S>)[])) patch[k] = this.defaults[k];
    this.set(patch);
  }

  /** Calls `fn` after every change; returns an unsubscribe function. */
  on(fn: Listener<ValuesOf<S>>): () => void {
    this.listeners.push(fn);
    return () => {
      const i = this.listeners.indexOf(fn);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }
}
