/**
 * Attributes of <qk-scope> -> a validated WidgetConfig (no DOM). Attributes are the
 * source of truth; every bad value falls back to its default and yields a message
 * (shown by the element in a polite role=status region), never an exception. The
 * accepted `score` and `normalizer` values are the core's registries (QkScope.scoreFunctions,
 * QkScope.normalizers): a function added to the C++ registry is accepted with no edit here.
 * Pipeline of the core: f(q,k) -> x scale -> mask -> normalize(z / temperature) -> weights x V.
 */
import type { CausalAlignment, ForwardOptions, QkScope } from '@qkscope/wasm';
import type { Mat } from '../model/matrix';
import { seededMatrix } from '../model/random';

export type MaskKind = 'none' | 'causal' | 'padding';
export type ViewKind = 'heatmap' | 'steps' | 'compare';
export type WidgetLang = 'en' | 'zh';
export type ControlName = 'score' | 'temperature' | 'mask' | 'normalizer' | 'view' | 'seed';

export const MASKS: readonly MaskKind[] = ['none', 'causal', 'padding'];
export const VIEWS: readonly ViewKind[] = ['heatmap', 'steps', 'compare'];
export const ALIGNMENTS: readonly CausalAlignment[] = ['top_left', 'bottom_right'];
export const LANGS: readonly WidgetLang[] = ['en', 'zh'];
export const CONTROLS: readonly ControlName[] = ['score', 'temperature', 'mask', 'normalizer', 'view', 'seed'];
export const DEFAULT_CONTROLS: readonly ControlName[] = ['score', 'temperature', 'mask'];

/** The names the core's registries hold, in their order. */
export interface Registry {
  scores: readonly string[];
  normalizers: readonly string[];
}

/** The registries of a loaded core. */
export function registryOf(core: Pick<QkScope, 'scoreFunctions' | 'normalizers'>): Registry {
  return { scores: core.scoreFunctions.map((f) => f.name), normalizers: core.normalizers.map((n) => n.name) };
}

/** Largest sequence length and head dimension the widget accepts (small matrices only). */
export const MAX_LEN = 16;
export const MAX_DIM = 16;

/** Every observed attribute, in the order of the docs table. */
export const ATTRIBUTES = [
  'score', 'd', 'lq', 'lk', 'seed', 'temperature', 'mask', 'key-length', 'causal-alignment',
  'normalizer', 'top-k', 'view', 'digits', 'lang', 'controls', 'q', 'k', 'v',
] as const;

/** The temperature slider's range (the number box takes any float32 temperature > 0). */
export const TAU_MIN = 0.05;
export const TAU_MAX = 20;

/** Most decimals a cell may print (`digits`). */
export const MAX_DIGITS = 6;
export type AttributeName = (typeof ATTRIBUTES)[number];

export interface WidgetConfig {
  /** A name from the core's score registry. */
  score: string;
  d: number;
  lq: number;
  lk: number;
  seed: number;
  temperature: number;
  mask: MaskKind;
  /** Valid keys when mask = 'padding' (1..lk). */
  keyLength: number;
  causalAlignment: CausalAlignment;
  /** A name from the core's normalizer registry. */
  normalizer: string;
  topK: number;
  view: ViewKind;
  /** Decimals printed in the cells; null: as many as fit a cell (at most 4). */
  digits: number | null;
  lang: WidgetLang;
  controls: ControlName[];
  q: Mat; // (lq, d)
  k: Mat; // (lk, d)
  v: Mat; // (lk, d)
}

/** One rejected attribute: its name, the text given, and the value used instead. */
export interface ConfigProblem {
  attribute: AttributeName;
  given: string;
  /** Machine-readable reason, translated by the element. */
  reason: 'choice' | 'integer' | 'positive' | 'json' | 'shape';
  /** What was expected, e.g. "1..16" or "dot | scaled_dot | ...". */
  expected: string;
  used: string;
}

type Get = (name: AttributeName) => string | null;

function choice<T extends string>(get: Get, name: AttributeName, options: readonly T[], fallback: T, out: ConfigProblem[]): T {
  const raw = get(name);
  if (raw === null) return fallback;
  const s = raw.trim();
  if ((options as readonly string[]).includes(s)) return s as T;
  out.push({ attribute: name, given: raw, reason: 'choice', expected: options.join(' | '), used: fallback });
  return fallback;
}

function integer(get: Get, name: AttributeName, lo: number, hi: number, fallback: number, out: ConfigProblem[]): number {
  const raw = get(name);
  if (raw === null) return fallback;
  const x = raw.trim() === '' ? NaN : Number(raw);
  if (Number.isInteger(x) && x >= lo && x <= hi) return x;
  out.push({ attribute: name, given: raw, reason: 'integer', expected: `${lo}..${hi}`, used: String(fallback) });
  return fallback;
}

/** The largest finite float32: the core computes in float32, so a larger entry is not a number it can take. */
const FLOAT32_MAX = 3.4028234663852886e38;
/** The smallest normal float32 (a temperature below it underflows in the core). */
const FLOAT32_MIN_NORMAL = 1.1754943508222875e-38;

/** A rectangular JSON matrix of finite numbers, at most MAX_LEN x MAX_DIM; null if absent or bad. */
function matrix(get: Get, name: AttributeName, out: ConfigProblem[]): Mat | null {
  const raw = get(name);
  if (raw === null || raw.trim() === '') return null;
  let m: unknown;
  try {
    m = JSON.parse(raw);
  } catch {
    out.push({ attribute: name, given: raw, reason: 'json', expected: '[[1,0],[0,1]]', used: 'seed' });
    return null;
  }
  const ok =
    Array.isArray(m) && m.length >= 1 && m.length <= MAX_LEN &&
    m.every((r) => Array.isArray(r) && r.length >= 1 && r.length <= MAX_DIM && r.length === (m as unknown[][])[0]!.length &&
      r.every((x) => typeof x === 'number' && Math.abs(x) <= FLOAT32_MAX));
  if (!ok) {
    out.push({ attribute: name, given: raw, reason: 'shape', expected: `rows 1..${MAX_LEN} of 1..${MAX_DIM} numbers within ±3.4e38 (float32), all the same length`, used: 'seed' });
    return null;
  }
  return m as Mat;
}

/** `preferred` when the registry has it, else its first name. */
function preferredOf(names: readonly string[], preferred: string): string {
  return names.includes(preferred) || names.length === 0 ? preferred : names[0]!;
}

/**
 * A registry name. Before the core has loaded (`names` null) the registry is not known
 * yet: any lower-case identifier passes, and the element checks again once it has loaded.
 */
function registered(get: Get, name: AttributeName, names: readonly string[] | null, preferred: string, out: ConfigProblem[]): string {
  if (names) return choice(get, name, names, preferredOf(names, preferred), out);
  const raw = get(name)?.trim();
  return raw && /^[a-z][a-z0-9_]*$/.test(raw) ? raw : preferred;
}

/**
 * Parses the attributes (read through `get`) into a config and the problems found;
 * `registry` (from `registryOf(core)`) decides which score and normalizer names exist.
 */
export function parseConfig(get: Get, registry: Registry | null = null): { config: WidgetConfig; problems: ConfigProblem[] } {
  const p: ConfigProblem[] = [];
  const score = registered(get, 'score', registry?.scores ?? null, 'scaled_dot', p);
  const seed = integer(get, 'seed', 0, 2 ** 31 - 1, 0, p);

  let temperature = 1;
  const rawT = get('temperature');
  if (rawT !== null) {
    const t = rawT.trim() === '' ? NaN : Number(rawT);
    // float32's range: a larger tau is +inf and a smaller one 0 in the core's precision.
    if (t >= FLOAT32_MIN_NORMAL && t <= FLOAT32_MAX) temperature = t;
    else p.push({ attribute: 'temperature', given: rawT, reason: 'positive', expected: '> 0 and <= 3.4e38 (float32)', used: '1' });
  }

  // Given matrices fix the shapes; otherwise d, lq, lk (defaults 4, 3, 3) and the seed do.
  let q = matrix(get, 'q', p);
  let k = matrix(get, 'k', p);
  let v = matrix(get, 'v', p);
  if (q && k && q[0]!.length !== k[0]!.length) {
    p.push({ attribute: 'k', given: get('k')!, reason: 'shape', expected: `rows of ${q[0]!.length} numbers (as q)`, used: 'seed' });
    k = null;
  }
  if (k && v && v.length !== k.length) {
    p.push({ attribute: 'v', given: get('v')!, reason: 'shape', expected: `${k.length} rows (as k)`, used: 'seed' });
    v = null;
  }
  const d = q ? q[0]!.length : k ? k[0]!.length : integer(get, 'd', 1, MAX_DIM, 4, p);
  const lq = q ? q.length : integer(get, 'lq', 1, MAX_LEN, 3, p);
  const lk = k ? k.length : v ? v.length : integer(get, 'lk', 1, MAX_LEN, lq, p);
  q ??= seededMatrix(seed, 0, lq, d);
  k ??= seededMatrix(seed, 1, lk, d);
  v ??= seededMatrix(seed, 2, lk, d);

  const mask = choice(get, 'mask', MASKS, 'none', p);
  const keyLength = integer(get, 'key-length', 1, lk, Math.max(1, lk - 1), p);
  const causalAlignment = choice(get, 'causal-alignment', ALIGNMENTS, 'top_left', p);
  const normalizer = registered(get, 'normalizer', registry?.normalizers ?? null, 'softmax', p);
  const topK = integer(get, 'top-k', 1, lk, Math.min(2, lk), p);
  const view = choice(get, 'view', VIEWS, 'heatmap', p);
  // Absent or rejected: as many decimals as fit (the message says "auto").
  const rawDigits = get('digits');
  const digitsValue = rawDigits === null ? NaN : Number(rawDigits);
  let digits: number | null = null;
  if (rawDigits !== null) {
    if (rawDigits.trim() !== '' && Number.isInteger(digitsValue) && digitsValue >= 0 && digitsValue <= MAX_DIGITS) digits = digitsValue;
    else p.push({ attribute: 'digits', given: rawDigits, reason: 'integer', expected: `0..${MAX_DIGITS}`, used: 'auto' });
  }
  const lang = choice(get, 'lang', LANGS, 'en', p);

  let controls = [...DEFAULT_CONTROLS];
  const rawC = get('controls');
  if (rawC !== null) {
    const words = rawC.split(/[\s,]+/).filter(Boolean);
    const bad = words.filter((w) => w !== 'none' && !(CONTROLS as readonly string[]).includes(w));
    if (bad.length) p.push({ attribute: 'controls', given: rawC, reason: 'choice', expected: `none | ${CONTROLS.join(' ')}`, used: words.filter((w) => !bad.includes(w)).join(' ') || 'none' });
    controls = words.filter((w): w is ControlName => (CONTROLS as readonly string[]).includes(w));
  }

  return {
    config: { score, d, lq, lk, seed, temperature, mask, keyLength, causalAlignment, normalizer, topK, view, digits, lang, controls, q, k, v },
    problems: p,
  };
}

/** The core's ForwardOptions for a config, with another scoring function if given (compare view). */
export function forwardOptions(c: WidgetConfig, score: string = c.score): ForwardOptions {
  const o: ForwardOptions = {
    query: c.q,
    key: c.k,
    value: c.v,
    score: score as ForwardOptions['score'],
    seed: c.seed,
    temperature: c.temperature,
    normalizer: c.normalizer as ForwardOptions['normalizer'],
    causal: c.mask === 'causal',
    causalAlignment: c.causalAlignment,
  };
  if (c.mask === 'padding') o.keyLength = c.keyLength;
  if (c.normalizer === 'topk_softmax') o.topK = c.topK;
  // 'dot' family needs d_q = d_k, which holds by construction (q and k share d).
  return o;
}
