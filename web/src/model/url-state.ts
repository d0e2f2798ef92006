/**
 * Namespaced, validated URL state for the chapters (no DOM): the page's one view-state
 * system. A chapter declares its controls as a table of fields, each with a default, a
 * parser that rejects garbage and a sanitizer that clamps; values round-trip through
 * "?<ns>.<key>=<value>" (namespace '' = plain "?<key>=<value>", chapter 1's keys) and only
 * values that differ from the default are written (after TF Playground's state.ts).
 *
 *   const spec = { score: choice(names, 'scaled_dot'), alpha: num(0.1, 0, 1), dh: int(4, 1, 16) };
 *   readValues(spec, new URLSearchParams('?c2.alpha=7'), 'c2')   // { score: 'scaled_dot', alpha: 1, dh: 4 }
 *   writeEntries(spec, values, 'c2')                              // [['c2.alpha', '1']]
 *
 * Hostile input is harmless by construction: a field's value is a number, a boolean, a
 * string from a fixed list, or a clamped numeric matrix; free text never gets through.
 */
import { type Mat, equal, resize } from './matrix';
import { shortNumber } from './format';

export interface FieldSpec<T> {
  readonly default: T;
  /** Value of a raw URL string, or null when it is not valid (the default is used then). */
  parse(raw: string): T | null;
  /** Brings a typed value into range (used for values set by controls). */
  sanitize(v: T): T;
  /** URL text of a value (without escaping). */
  format(v: T): string;
  equals(a: T, b: T): boolean;
}

export type FieldSpecs = Record<string, FieldSpec<any>>;
export type ValuesOf<S extends FieldSpecs> = { [K in keyof S]: S[K] extends FieldSpec<infer T> ? T : never };

/** Sizes and entries of the small editable matrices (Q, K, V) of the figures. */
export const MATRIX_LIMITS = {
  len: { min: 1, max: 8 },
  dim: { min: 1, max: 8 },
  value: { min: -100, max: 100 },
} as const;

/** The URL parameter of field `key` in namespace `ns` ('' = no prefix). */
export function paramName(ns: string, key: string): string {
  return ns ? `${ns}.${key}` : key;
}

export function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}

function parseNumber(raw: string): number | null {
  if (raw.trim() === '' || raw.length > 32) return null;
  const x = Number(raw);
  return Number.isFinite(x) ? x : null;
}

/** A number in [min, max]; `integer` rounds; `digits` significant digits are kept. */
export function num(def: number, min: number, max: number, opts: { integer?: boolean; digits?: number } = {}): FieldSpec<number> {
  const sanitize = (x: number) => {
    const c = clamp(Number.isFinite(x) ? x : def, min, max);
    return opts.integer ? Math.round(c) : Number(c.toPrecision(opts.digits ?? 6));
  };
  return {
    default: def,
    parse: (raw) => {
      const x = parseNumber(raw);
      return x === null ? null : sanitize(x);
    },
    sanitize,
    format: (v) => shortNumber(v, opts.digits ?? 6),
    equals: (a, b) => a === b,
  };
}

/** An integer in [min, max]. */
export function int(def: number, min: number, max: number): FieldSpec<number> {
  return num(def, min, max, { integer: true });
}

/** A boolean written as 1 / 0 (also reads true/false, on/off, yes/no). */
export function bool(def: boolean): FieldSpec<boolean> {
  return {
    default: def,
    parse: (raw) => (['1', 'true', 'on', 'yes'].includes(raw) ? true : ['0', 'false', 'off', 'no'].includes(raw) ? false : null),
    sanitize: (v) => Boolean(v),
    format: (v) => (v ? '1' : '0'),
    equals: (a, b) => a === b,
  };
}

/** One of a fixed list of strings (e.g. the core's scoring-function names). */
export function choice<T extends string>(values: readonly T[], def: T): FieldSpec<T> {
  const ok = (v: string): v is T => (values as readonly string[]).includes(v);
  return {
    default: def,
    parse: (raw) => (ok(raw) ? raw : null),
    sanitize: (v) => (ok(v) ? v : def),
    format: (v) => v,
    equals: (a, b) => a === b,
  };
}

export interface MatrixLimits {
  rows: readonly [number, number];
  cols: readonly [number, number];
  value: readonly [number, number];
}

/**
 * A numeric matrix written "1,0,2;0,1,3" (rows by ';', entries by ','). Its shape comes
 * from the text, clamped to the limits; ragged rows are zero-padded, bad entries read 0.
 */
const L = MATRIX_LIMITS;
export function matrix(def: Mat, lim: MatrixLimits = { rows: [L.len.min, L.len.max], cols: [L.dim.min, L.dim.max], value: [L.value.min, L.value.max] }): FieldSpec<Mat> {
  const sanitize = (m: Mat): Mat => {
    const rows = clamp(m.length, lim.rows[0], lim.rows[1]);
    const cols = clamp(Math.max(0, ...m.map((r) => r.length)), lim.cols[0], lim.cols[1]);
    return resize(m, rows, cols).map((r) => r.map((x) => (Number.isFinite(x) ? clamp(x, lim.value[0], lim.value[1]) : 0)));
  };
  return {
    default: def,
    parse: (raw) => {
      if (raw.length > 4000) return null;
      const rows = raw.split(';').slice(0, lim.rows[1]).map((r) => r.split(',').slice(0, lim.cols[1]).map((c) => parseNumber(c) ?? 0));
      return sanitize(rows);
    },
    sanitize,
    format: (m) => m.map((r) => r.map((x) => shortNumber(x)).join(',')).join(';'),
    equals: equal,
  };
}

/** The defaults of a field table. */
export function defaults<S extends FieldSpecs>(spec: S): ValuesOf<S> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(spec)) out[k] = spec[k]!.default;
  return out as ValuesOf<S>;
}

/** Values from URL parameters "<ns>.<key>"; missing or invalid ones take their default. */
export function readValues<S extends FieldSpecs>(spec: S, params: URLSearchParams, ns: string): ValuesOf<S> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(spec)) {
    const raw = params.get(paramName(ns, k));
    out[k] = (raw === null ? null : spec[k]!.parse(raw)) ?? spec[k]!.default;
  }
  return out as ValuesOf<S>;
}

/** Sanitizes the fields present in `patch` (unknown keys are dropped). */
export function sanitizePatch<S extends FieldSpecs>(spec: S, patch: Partial<ValuesOf<S>>): Partial<ValuesOf<S>> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(patch)) if (k in spec) out[k] = spec[k]!.sanitize((patch as Record<string, unknown>)[k]);
  return out as Partial<ValuesOf<S>>;
}

/**
 * URL entries [key, text] of the values that differ from their defaults, in field order.
 * With a cross-field rule `normalize` (e.g. Q resized to L_q x d_q), a value is at its
 * default when it equals what the default becomes under the other values, so a matrix
 * that only followed a size change is not written (reading applies the same rule).
 */
export function writeEntries<S extends FieldSpecs>(spec: S, values: ValuesOf<S>, ns: string, normalize: (v: ValuesOf<S>) => ValuesOf<S> = (v) => v): [string, string][] {
  const out: [string, string][] = [];
  for (const k of Object.keys(spec)) {
    const f = spec[k]!;
    const v = (values as Record<string, unknown>)[k];
    const def = (normalize({ ...values, [k]: f.default }) as Record<string, unknown>)[k];
    if (!f.equals(v, def)) out.push([paramName(ns, k), f.format(v)]);
  }
  return out;
}

/** The parameter names a field table owns in namespace `ns`. */
export function paramNames(spec: FieldSpecs, ns: string): string[] {
  return Object.keys(spec).map((k) => paramName(ns, k));
}
