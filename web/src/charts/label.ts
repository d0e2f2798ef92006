/**
 * Labels with a little notation, written plainly in the catalogs ("Queries L_q",
 * "Effective support e^H", "2^(−8h/H)", "q^T W k") and drawn with real subscripts and
 * superscripts: <sub>/<sup> in HTML, baseline-shifted <tspan>s in SVG, never as raw TeX.
 * Rules: a single letter (not inside a word, so "masked_fill" stays as it is) followed by
 * "_x", "_{xy}" or "_xyz" takes a subscript; a letter or digit followed by "^x", "^{..}" or
 * "^(...)" takes a superscript; "^T" is the transpose sign ⊤.
 */

export interface LabelPart {
  text: string;
  kind: 'base' | 'sub' | 'sup';
}

const NOTATION = /(^|[^A-Za-z0-9])([A-Za-zα-ωΔ0-9])(?:_(\{[^}]+\}|[A-Za-z0-9ℓ]+)|\^(\{[^}]+\}|\([^)]*\)|[A-Za-z0-9]+))/g;

function unwrap(s: string): string {
  return /^[({].*[)}]$/.test(s) ? s.slice(1, -1) : s;
}

/** Splits a label into plain, subscript and superscript runs. */
export function labelParts(text: string): LabelPart[] {
  const parts: LabelPart[] = [];
  let last = 0;
  const push = (t: string, kind: LabelPart['kind']) => {
    if (!t) return;
    const prev = parts[parts.length - 1];
    if (prev && prev.kind === kind) prev.text += t;
    else parts.push({ text: t, kind });
  };
  for (const m of text.matchAll(NOTATION)) {
    const start = m.index! + m[1]!.length;
    push(text.slice(last, start), 'base');
    push(m[2]!, 'base');
    if (m[3] !== undefined) push(unwrap(m[3]), 'sub');
    else push(m[4] === 'T' ? '\u22a4' : unwrap(m[4]!), 'sup');
    last = m.index! + m[0].length;
  }
  push(text.slice(last), 'base');
  return parts;
}

/** The label as HTML nodes (text, <sub>, <sup>). */
export function labelNodes(text: string): (Node | string)[] {
  return labelParts(text).map((p) => {
    if (p.kind === 'base') return p.text;
    const e = document.createElement(p.kind);
    e.textContent = p.text;
    return e;
  });
}

/** Replaces an element's children by the label. */
export function setLabel(el: Element, text: string): void {
  el.replaceChildren(...labelNodes(text));
}

/** Readable plain text of the label (aria-label, title): "L_q" -> "Lq", "e^H" -> "e^H" kept legible. */
export function labelPlain(text: string): string {
  return labelParts(text).map((p) => (p.kind === 'sup' && p.text !== '\u22a4' ? `^${p.text}` : p.text)).join('');
}

const SVG = 'http://www.w3.org/2000/svg';

/** Fills an SVG <text> with the label: subscripts and superscripts as smaller shifted tspans. */
export function setSvgLabel(el: SVGTextElement, text: string): void {
  el.replaceChildren();
  for (const p of labelParts(text)) {
    const t = document.createElementNS(SVG, 'tspan');
    t.textContent = p.text;
    if (p.kind !== 'base') {
      t.setAttribute('baseline-shift', p.kind === 'sub' ? 'sub' : 'super');
      t.setAttribute('font-size', '75%');
    }
    el.append(t);
  }
}
