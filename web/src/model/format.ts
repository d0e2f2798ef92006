/**
 * Number formatting for prose, cells, legends, URLs and TeX (no DOM): the one place that
 * turns numbers into text. Display text uses the typographic minus (U+2212); TeX and URL
 * text use '-'.
 */

const MINUS = '\u2212';

/** Fixed decimals, no "-0", ±Infinity as ±∞, NaN as "NaN". */
export function fixed(x: number, decimals: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return '∞';
  if (x === -Infinity) return `${MINUS}∞`;
  let s = x.toFixed(decimals);
  if (/^-0(\.0*)?$/.test(s)) s = s.slice(1);
  return s.replace('-', MINUS);
}

/** At most `digits` significant digits, ASCII, tiny values (|x| < 1e-9) as 0: URL and data text. */
export function shortNumber(x: number, digits = 6): string {
  if (Math.abs(x) < 1e-9) return '0';
  return String(Number(x.toPrecision(digits)));
}

/**
 * Display text with `digits` significant digits (typographic minus); nonzero |x| below `tiny`
 * in scientific notation with `expDigits` decimals; non-finite values as an en dash.
 */
export function sig(x: number, digits = 3, opts: { tiny?: number; expDigits?: number } = {}): string {
  if (!Number.isFinite(x)) return '\u2013';
  if (x !== 0 && Math.abs(x) < (opts.tiny ?? 0)) return x.toExponential(opts.expDigits ?? 1).replace('-', MINUS);
  return shortNumber(x, digits).replace('-', MINUS);
}

/** Like `fixed` but trailing zeros (and a bare point) removed: 0.5000 -> 0.5, 1.0000 -> 1. */
export function trimmed(x: number, decimals: number): string {
  const s = fixed(x, decimals);
  return s.includes('.') && Number.isFinite(x) ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
}

/** A number for TeX source. */
export function tex(x: number, decimals: number, trim = false): string {
  if (x === Infinity) return '\\infty';
  if (x === -Infinity) return '-\\infty';
  return (trim ? trimmed(x, decimals) : fixed(x, decimals)).replace(MINUS, '-');
}

/** A bmatrix in TeX. */
export function texMatrix(m: number[][], decimals: number, trim = false): string {
  const body = m.map((r) => r.map((x) => tex(x, decimals, trim)).join(' & ')).join(' \\\\ ');
  return `\\begin{bmatrix} ${body} \\end{bmatrix}`;
}

/** A row vector in TeX: [a, b, c]. */
export function texRow(xs: ArrayLike<number>, decimals: number, trim = false): string {
  return `[${Array.from(xs, (x) => tex(x, decimals, trim)).join(',\\ ')}]`;
}

/** A row vector as display text: [a, b, c]. */
export function textRow(xs: ArrayLike<number>, decimals: number): string {
  return `[${Array.from(xs, (x) => fixed(x, decimals)).join(', ')}]`;
}

/** Decimals printed in heatmap cells: fewer when there are many columns. */
export function cellDecimals(cols: number): number {
  return cols <= 6 ? 4 : 3;
}

/** Most decimals (<= `max`) at which every finite value prints in at most `maxChars` characters. */
export function fitDecimals(values: ArrayLike<number>, max: number, maxChars = 6): number {
  for (let d = max; d > 0; d--) {
    let fits = true;
    for (let k = 0; k < values.length && fits; k++) {
      const x = values[k]!;
      if (Number.isFinite(x) && fixed(x, d).length > maxChars) fits = false;
    }
    if (fits) return d;
  }
  return 0;
}
