/**
 * The core's error messages (RangeError from the wasm module, always English: they name the
 * argument and the shape or value at fault) in the page's language. English passes through;
 * for Chinese the messages a reader can reach from the tutorial's controls are matched by
 * pattern and rewritten with the same argument names and numbers, and anything else gets a
 * generic Chinese sentence, so no English sentence appears on the Chinese page.
 */
import type { Lang } from './types';

type Rule = [RegExp, (m: RegExpMatchArray) => string];

const ZH_SCORES: Record<string, string> = { 'dot-product': '点积', cosine: '余弦相似度', 'scaled dot-product': '缩放点积' };

const ZH: Rule[] = [
  [/^query and key must have the same width d for (.+?) scores, got d_q = (\d+), d_k = (\d+)$/,
    (m) => `${ZH_SCORES[m[1]!] ?? m[1]}评分要求查询与键的宽度 d 相同，但 d_q = ${m[2]}，d_k = ${m[3]}`],
  [/^(\S+) must have L_k = (\d+) rows \(one per key\), got shape \((\d+), (\d+)\)$/,
    (m) => `${m[1]} 必须有 L_k = ${m[2]} 行（每个键一行），实际形状为 (${m[3]}, ${m[4]})`],
  [/^(\S+) must be an integer \[(.+?)\], got (.+)$/, (m) => `${m[1]} 必须是 [${m[2]}] 内的整数，实际为 ${m[3]}`],
  [/^(\S+) must be in \[(.+?)\], got (.+)$/, (m) => `${m[1]} 必须在 [${m[2]}] 内，实际为 ${m[3]}`],
  [/^temperature must be finite and > 0.*got (\S+)/, (m) => `温度系数必须是有限的正数，实际为 ${m[1]}`],
  [/^(\S+) is (NaN|Infinity|-Infinity)$/, (m) => `${m[1]} 的值为 ${m[2]}，必须是有限的数`],
];
const ZH_FALLBACK = '核心拒绝了这组输入：某个参数的形状或取值不符合要求。';

/** The message of an error thrown by the core, in `lang`. */
export function coreMessage(lang: Lang, e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  if (lang !== 'zh') return message;
  for (const [re, out] of ZH) {
    const m = message.match(re);
    if (m) return out(m);
  }
  return ZH_FALLBACK;
}
