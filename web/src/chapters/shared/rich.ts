/**
 * Renders the small prose markup of the catalogs (see i18n/types.ts) to HTML,
 * with KaTeX for math. Text is HTML-escaped; only the markup below becomes tags:
 * blocks split on blank lines; "$$…$$" display math; "- " bullets; "1. " numbered
 * items; inline "$…$" math, **bold**, *italic*; {{name}} slots filled from `vars` first.
 */
import katex from 'katex';

export type Vars = Record<string, string>;

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

export function tex(source: string, displayMode = false): string {
  return katex.renderToString(source, { displayMode, throwOnError: false, output: 'htmlAndMathml' });
}

/** Fills {{name}} slots; a missing value is shown as "?" so it is noticed. */
export function fillVars(text: string, vars: Vars): string {
  return text.replace(/\{\{(\w+)\}\}/g, (_, k: string) => vars[k] ?? '?');
}

/** Inline markup: $math$, **bold**, *italic* (bold and italic may contain math). */
export function inline(text: string): string {
  // Math and the punctuation right after it ("$x$," "$x$。") stay on one line. Math is set
  // aside first (as \u0000n\u0000), so that "**Entropy near $\log L_k$**" is bold as a whole.
  const maths: string[] = [];
  const held = text.replace(/\$[^$]+\$[.,;:!?)。，、；：！？）]?/g, (part) => {
    const end = part.lastIndexOf('$');
    const math = tex(part.slice(1, end).trim());
    const punct = part.slice(end + 1);
    maths.push(punct ? `<span class="nowrap">${math}${escapeHtml(punct)}</span>` : math);
    return `\u0000${maths.length - 1}\u0000`;
  });
  return escapeHtml(held)
    .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
    .replace(/\*([^*]+)\*/g, '<em>$1</em>')
    .replace(/\u0000(\d+)\u0000/g, (_, k: string) => maths[Number(k)]!);
}

function list(lines: string[], tag: 'ul' | 'ol', marker: RegExp): string {
  return `<${tag}>${lines.map((l) => `<li>${inline(l.replace(marker, ''))}</li>`).join('')}</${tag}>`;
}

/** A whole body (several blocks) as HTML. */
export function rich(body: string, vars: Vars = {}): string {
  return fillVars(body, vars)
    .split(/\n\s*\n/)
    .map((block) => block.trim())
    .filter((block) => block.length > 0)
    .map((block) => {
      if (block.startsWith('$$') && block.endsWith('$$')) {
        return `<div class="math-display">${tex(block.slice(2, -2).trim(), true)}</div>`;
      }
      const lines = block.split('\n');
      if (lines.every((l) => /^- /.test(l))) return list(lines, 'ul', /^- /);
      if (lines.every((l) => /^\d+\. /.test(l))) return list(lines, 'ol', /^\d+\. /);
      // A paragraph that introduces a list: "text:\n- a\n- b".
      const firstItem = lines.findIndex((l) => /^(- |\d+\. )/.test(l));
      if (firstItem > 0) {
        const items = lines.slice(firstItem);
        const ordered = /^\d+\. /.test(items[0]!);
        return `<p>${inline(lines.slice(0, firstItem).join(' '))}</p>` +
          list(items, ordered ? 'ol' : 'ul', ordered ? /^\d+\. / : /^- /);
      }
      return `<p>${inline(lines.join(' '))}</p>`;
    })
    .join('\n');
}
