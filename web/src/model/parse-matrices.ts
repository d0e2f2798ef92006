/**
 * Reads Q, K and V pasted by the reader (no DOM), as JSON or CSV, and says exactly what is
 * wrong when it cannot: errors are codes with values, turned into sentences by the page's
 * catalog (common.paste), so they read naturally in every language.
 *
 * JSON: {"Q": [[...], ...], "K": [[...]], "V": [[...]]} (keys in any case; V optional).
 * CSV:  one row per line, entries separated by commas, tabs, semicolons or spaces; matrices
 *       separated by blank lines, or introduced by a line "Q", "K" or "V" (optionally "Q:").
 *       Unlabelled blocks are Q, K, V in order. A missing V means V = K.
 */
import type { Mat } from './matrix';

export interface PasteLimits {
  len: { min: number; max: number };
  dim: { min: number; max: number };
  value: { min: number; max: number };
}

export type PasteError =
  | { code: 'empty' }
  | { code: 'json'; line: number; col: number; near: string }
  | { code: 'jsonShape' }
  | { code: 'notNumber'; m: string; i: number; j: number; text: string }
  | { code: 'ragged'; m: string; i: number; got: number; expected: number }
  | { code: 'missing'; m: string }
  | { code: 'tooBig'; m: string; rows: number; cols: number; maxRows: number; maxCols: number }
  | { code: 'tooSmall'; m: string }
  | { code: 'range'; m: string; i: number; j: number; value: number; min: number; max: number }
  | { code: 'kvRows'; k: number; v: number }
  | { code: 'tooManyBlocks'; n: number }
  | { code: 'unknownLabel'; line: number; text: string };

export type PasteResult = { ok: true; q: Mat; k: Mat; v: Mat } | { ok: false; error: PasteError };

const MAX_CHARS = 20_000;
const short = (s: string) => (s.length > 24 ? `${s.slice(0, 23)}…` : s);

function fail(error: PasteError): PasteResult {
  return { ok: false, error };
}

/** Checks one matrix against the limits; returns an error or null. */
function check(m: Mat, name: string, lim: PasteLimits): PasteError | null {
  if (m.length === 0 || m[0]!.length === 0) return { code: 'tooSmall', m: name };
  const cols = m[0]!.length;
  for (let i = 0; i < m.length; i++) if (m[i]!.length !== cols) return { code: 'ragged', m: name, i: i + 1, got: m[i]!.length, expected: cols };
  if (m.length > lim.len.max || cols > lim.dim.max)
    return { code: 'tooBig', m: name, rows: m.length, cols, maxRows: lim.len.max, maxCols: lim.dim.max };
  for (let i = 0; i < m.length; i++)
    for (let j = 0; j < cols; j++) {
      const x = m[i]![j]!;
      if (x < lim.value.min || x > lim.value.max) return { code: 'range', m: name, i: i + 1, j: j + 1, value: x, min: lim.value.min, max: lim.value.max };
    }
  return null;
}

function finish(q: Mat | undefined, k: Mat | undefined, v: Mat | undefined, lim: PasteLimits): PasteResult {
  if (!q) return fail({ code: 'missing', m: 'Q' });
  if (!k) return fail({ code: 'missing', m: 'K' });
  const vv = v ?? k.map((r) => r.slice());
  for (const [m, name] of [[q, 'Q'], [k, 'K'], [vv, 'V']] as const) {
    const e = check(m, name, lim);
    if (e) return fail(e);
  }
  if (vv.length !== k.length) return fail({ code: 'kvRows', k: k.length, v: vv.length });
  return { ok: true, q, k, v: vv };
}

function fromJson(value: unknown, lim: PasteLimits): PasteResult {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail({ code: 'jsonShape' });
  const get = (name: string): Mat | undefined | PasteError => {
    const key = Object.keys(value).find((k) => k.toUpperCase() === name);
    if (key === undefined) return undefined;
    const m = (value as Record<string, unknown>)[key];
    if (!Array.isArray(m) || !m.every((r) => Array.isArray(r))) return { code: 'jsonShape' };
    const out: Mat = [];
    for (let i = 0; i < m.length; i++) {
      const row: number[] = [];
      for (let j = 0; j < (m[i] as unknown[]).length; j++) {
        const x = (m[i] as unknown[])[j];
        const n = typeof x === 'number' ? x : typeof x === 'string' && x.trim() !== '' ? Number(x) : NaN;
        if (!Number.isFinite(n)) return { code: 'notNumber', m: name, i: i + 1, j: j + 1, text: short(JSON.stringify(x) ?? String(x)) };
        row.push(n);
      }
      out.push(row);
    }
    return out;
  };
  const mats: (Mat | undefined)[] = [];
  for (const name of ['Q', 'K', 'V']) {
    const m = get(name);
    if (m && !Array.isArray(m)) return fail(m);
    mats.push(m);
  }
  return finish(mats[0], mats[1], mats[2], lim);
}

function fromCsv(text: string, lim: PasteLimits): PasteResult {
  const lines = text.split(/\r?\n/);
  const blocks: { label: string | null; rows: { line: number; cells: string[] }[] }[] = [];
  let cur: (typeof blocks)[number] | null = null;
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!.trim();
    if (line === '' || line.startsWith('#')) {
      if (cur && cur.rows.length) cur = null;
      continue;
    }
    const label = /^([A-Za-z][\w]*)\s*:?\s*$/.exec(line);
    if (label) {
      const name = label[1]!.toUpperCase();
      if (!['Q', 'K', 'V'].includes(name)) return fail({ code: 'unknownLabel', line: n + 1, text: short(label[1]!) });
      cur = { label: name, rows: [] };
      blocks.push(cur);
      continue;
    }
    if (!cur) {
      cur = { label: null, rows: [] };
      blocks.push(cur);
    }
    cur.rows.push({ line: n + 1, cells: line.split(/\s*[,;\t]\s*|\s+/).filter((c, k, a) => !(c === '' && (k === 0 || k === a.length - 1))) });
  }
  if (blocks.length > 3) return fail({ code: 'tooManyBlocks', n: blocks.length });
  const named = new Map<string, Mat>();
  const order = ['Q', 'K', 'V'];
  let next = 0;
  for (const b of blocks) {
    const name = b.label ?? order.find((o, k) => k >= next && !named.has(o)) ?? 'V';
    next = order.indexOf(name) + 1;
    const m: Mat = [];
    for (let i = 0; i < b.rows.length; i++) {
      const row: number[] = [];
      for (let j = 0; j < b.rows[i]!.cells.length; j++) {
        const c = b.rows[i]!.cells[j]!;
        const x = c === '' ? NaN : Number(c);
        if (!Number.isFinite(x)) return fail({ code: 'notNumber', m: name, i: i + 1, j: j + 1, text: short(c) });
        row.push(x);
      }
      m.push(row);
    }
    named.set(name, m);
  }
  return finish(named.get('Q'), named.get('K'), named.get('V'), lim);
}

/**
 * Where JSON.parse stopped, as line, column and the text there: the engine's own message is
 * English and differs between browsers, so only the position is taken from it (V8 and
 * Firefox give "position N" or "line L column C"; without one, the end of the text).
 */
function jsonError(text: string, message: string): PasteError {
  const lc = /line (\d+) column (\d+)/.exec(message);
  const pos = /position (\d+)/.exec(message);
  let at = text.length;
  if (pos) at = Math.min(text.length, Number(pos[1]));
  else if (lc) {
    const lines = text.split('\n');
    at = lines.slice(0, Number(lc[1]) - 1).reduce((n, l) => n + l.length + 1, 0) + Number(lc[2]) - 1;
  }
  const before = text.slice(0, at);
  const line = before.split('\n').length;
  const col = at - before.lastIndexOf('\n');
  const near = text.slice(Math.max(0, at - 12), at + 12).replace(/\s+/g, ' ').trim();
  return { code: 'json', line, col, near: near || '…' };
}

/** Parses pasted text (JSON when it starts with '{', else CSV). */
export function parseMatrices(text: string, lim: PasteLimits): PasteResult {
  const s = text.trim();
  if (s === '') return fail({ code: 'empty' });
  if (s.length > MAX_CHARS) return fail({ code: 'tooBig', m: 'Q', rows: NaN, cols: NaN, maxRows: lim.len.max, maxCols: lim.dim.max });
  if (s.startsWith('{') || s.startsWith('[')) {
    let value: unknown;
    try {
      value = JSON.parse(s);
    } catch (e) {
      return fail(jsonError(s, e instanceof Error ? e.message : String(e)));
    }
    return fromJson(value, lim);
  }
  return fromCsv(s, lim);
}

/** Matrices as the CSV this parser reads back (for "fill with the current matrices"). */
export function matricesToCsv(q: Mat, k: Mat, v: Mat): string {
  const block = (name: string, m: Mat) => `${name}\n${m.map((r) => r.join(', ')).join('\n')}`;
  return [block('Q', q), block('K', k), block('V', v)].join('\n\n');
}
