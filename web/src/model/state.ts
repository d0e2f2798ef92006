/**
 * View state of the tutorial in one table of fields, each with a default, a URL
 * parameter, a validating/clamping parser and a serializer (after TF Playground's
 * state.ts). Only values that differ from the defaults are written to the URL.
 * No DOM here: `parseState(location.search, ctx)` / `serializeState(state, ctx)`.
 */
import { type Mat, clone, equal, resize } from './matrix';

export type Lang = 'en' | 'zh';
export const LANGS: readonly Lang[] = ['en', 'zh'];

export interface ViewState {
  lang: Lang;
  /** Scoring function name, one of the core's registry (`qk.scoreFunctions`). */
  score: string;
  /** Softmax temperature tau > 0. */
  tau: number;
  causal: boolean;
  /** Valid keys (key padding), 1..lk. */
  keyLength: number;
  /** Seed for the parameters of parametric scores (bilinear, additive, ...). */
  seed: number;
  lq: number;
  lk: number;
  dq: number;
  dk: number;
  dv: number;
  q: Mat; // (lq, dq)
  k: Mat; // (lk, dk)
  v: Mat; // (lk, dv)
}

/** What the parser needs to know about the running core. */
export interface StateContext {
  /** Scoring function names from the registry, in order. */
  scores: readonly string[];
}

export const LIMITS = {
  len: { min: 1, max: 8 },
  dim: { min: 1, max: 8 },
  tau: { min: 0.05, max: 20 },
  value: { min: -100, max: 100 },
  seed: { min: 0, max: 999_999 },
} as const;

/** The worked example (TUTORIAL_FACTS §4): X with W_Q = W_K = W_V = I, so Q = K = V = X. */
export const WORKED_X: Mat = [
  [1, 0, 1, 0],
  [0, 1, 0, 1],
  [1, 1, 0, 0],
];

export const PREFERRED_SCORE = 'scaled_dot';

export function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}

/** The state a fresh page starts in. */
export function defaultState(ctx: StateContext, lang: Lang = 'en'): ViewState {
  const [lq, dim] = [WORKED_X.length, WORKED_X[0]!.length];
  return {
    lang,
    score: ctx.scores.includes(PREFERRED_SCORE) ? PREFERRED_SCORE : (ctx.scores[0] ?? PREFERRED_SCORE),
    tau: 1,
    causal: false,
    keyLength: lq,
    seed: 0,
    lq,
    lk: lq,
    dq: dim,
    dk: dim,
    dv: dim,
    q: clone(WORKED_X),
    k: clone(WORKED_X),
    v: clone(WORKED_X),
  };
}

/** Default contents of a matrix at the given size: the worked example, cut or zero-padded. */
function defaultMatrix(rows: number, cols: number): Mat {
  return resize(WORKED_X, rows, cols);
}

/** Sets sizes, resizing Q/K/V (entries keep their place) and keeping keyLength valid. */
export function withSizes(s: ViewState, sizes: Partial<Pick<ViewState, 'lq' | 'lk' | 'dq' | 'dk' | 'dv'>>): ViewState {
  const n = { ...s, ...sizes };
  const lq = clampInt(n.lq, LIMITS.len);
  const lk = clampInt(n.lk, LIMITS.len);
  const dq = clampInt(n.dq, LIMITS.dim);
  const dk = clampInt(n.dk, LIMITS.dim);
  const dv = clampInt(n.dv, LIMITS.dim);
  // "All keys valid" stays "all keys valid" when L_k changes.
  const keyLength = s.keyLength >= s.lk ? lk : clamp(s.keyLength, 1, lk);
  return { ...s, lq, lk, dq, dk, dv, keyLength, q: resize(s.q, lq, dq), k: resize(s.k, lk, dk), v: resize(s.v, lk, dv) };
}

// ---------------------------------------------------------------------------
// The field table. Order matters when parsing: sizes before the matrices and
// before keyLength, which are clamped to them.

interface Field {
  param: string;
  /** Applies a raw URL value to the state (validated and clamped); ignores garbage. */
  read(raw: string, s: ViewState, ctx: StateContext): void;
  /** The URL value, or null when the state holds the default. */
  write(s: ViewState, d: ViewState): string | null;
}

function clampInt(x: number, r: { min: number; max: number }): number {
  return clamp(Math.round(x), r.min, r.max);
}

function parseNumber(raw: string): number | null {
  if (raw.trim() === '') return null;
  const x = Number(raw);
  return Number.isFinite(x) ? x : null;
}

/** Short URL text of a number (6 significant digits, tiny values as 0). */
export function numberText(x: number): string {
  if (Math.abs(x) < 1e-6) return '0';
  return String(Number(x.toPrecision(6)));
}

function intField(param: string, key: 'lq' | 'lk' | 'dq' | 'dk' | 'dv' | 'seed', r: { min: number; max: number }): Field {
  return {
    param,
    read(raw, s) {
      const x = parseNumber(raw);
      if (x !== null) s[key] = clampInt(x, r);
    },
    write: (s, d) => (s[key] === d[key] ? null : String(s[key])),
  };
}

function matrixField(param: string, key: 'q' | 'k' | 'v', rows: (s: ViewState) => number, cols: (s: ViewState) => number): Field {
  return {
    param,
    read(raw, s) {
      const parsed = raw.split(';').map((r) =>
        r.split(',').map((c) => {
          const x = parseNumber(c);
          return x === null ? 0 : clamp(x, LIMITS.value.min, LIMITS.value.max);
        }),
      );
      s[key] = resize(parsed, rows(s), cols(s));
    },
    write(s) {
      const m = s[key];
      if (equal(m, defaultMatrix(rows(s), cols(s)))) return null;
      return m.map((r) => r.map(numberText).join(',')).join(';');
    },
  };
}

export const FIELDS: readonly Field[] = [
  {
    param: 'lang',
    read(raw, s) {
      if ((LANGS as readonly string[]).includes(raw)) s.lang = raw as Lang;
    },
    write: (s, d) => (s.lang === d.lang ? null : s.lang),
  },
  {
    param: 'score',
    read(raw, s, ctx) {
      if (ctx.scores.includes(raw)) s.score = raw;
    },
    write: (s, d) => (s.score === d.score ? null : s.score),
  },
  {
    param: 'tau',
    read(raw, s) {
      const x = parseNumber(raw);
      if (x !== null) s.tau = clamp(x, LIMITS.tau.min, LIMITS.tau.max);
    },
    write: (s, d) => (s.tau === d.tau ? null : numberText(s.tau)),
  },
  {
    param: 'causal',
    read(raw, s) {
      if (['1', 'true', 'on', 'yes'].includes(raw)) s.causal = true;
      else if (['0', 'false', 'off', 'no'].includes(raw)) s.causal = false;
    },
    write: (s, d) => (s.causal === d.causal ? null : s.causal ? '1' : '0'),
  },
  intField('seed', 'seed', LIMITS.seed),
  intField('lq', 'lq', LIMITS.len),
  intField('lk', 'lk', LIMITS.len),
  intField('dq', 'dq', LIMITS.dim),
  intField('dk', 'dk', LIMITS.dim),
  intField('dv', 'dv', LIMITS.dim),
  {
    param: 'klen',
    read(raw, s) {
      const x = parseNumber(raw);
      if (x !== null) s.keyLength = Math.round(x);
    },
    write: (s) => (s.keyLength >= s.lk ? null : String(s.keyLength)),
  },
  matrixField('q', 'q', (s) => s.lq, (s) => s.dq),
  matrixField('k', 'k', (s) => s.lk, (s) => s.dk),
  matrixField('v', 'v', (s) => s.lk, (s) => s.dv),
];

/** Parses a query string ("?a=1&b=2" or "a=1&b=2"); unknown or invalid values fall back to defaults. */
export function parseState(query: string, ctx: StateContext): ViewState {
  const params = new URLSearchParams(query);
  const s = defaultState(ctx);
  // Sizes decide the default matrices, so apply them before the matrices are read.
  for (const f of FIELDS) {
    const raw = params.get(f.param);
    if (raw !== null) f.read(raw, s, ctx);
    if (f.param === 'dv') {
      // All sizes are known now: the default matrices and key length follow them.
      s.q = defaultMatrix(s.lq, s.dq);
      s.k = defaultMatrix(s.lk, s.dk);
      s.v = defaultMatrix(s.lk, s.dv);
      s.keyLength = s.lk;
    }
  }
  s.keyLength = clamp(s.keyLength, 1, s.lk);
  return s;
}

/** The query string for a state ("" when everything is at its default), without "?". */
export function serializeState(s: ViewState, ctx: StateContext): string {
  const d = defaultState(ctx);
  const parts: string[] = [];
  for (const f of FIELDS) {
    const v = f.write(s, d);
    // ',' and ';' are legal in a query and keep matrices readable; escape the rest.
    if (v !== null) parts.push(`${f.param}=${encodeURIComponent(v).replace(/%2C/g, ',').replace(/%3B/g, ';')}`);
  }
  return parts.join('&');
}

/** The figure's state reset to defaults, keeping the page-level settings (language). */
export function resetFigure(s: ViewState, ctx: StateContext): ViewState {
  return defaultState(ctx, s.lang);
}
