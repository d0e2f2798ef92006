/**
 * The core's error messages (RangeError from the wasm module, always English: they name the
 * argument and the shape or value at fault) in the page's language. English passes through;
 * for Chinese the messages a reader can reach from the tutorial's controls are matched by
 * pattern and rewritten with the same argument names and numbers, and anything else gets a
 * generic Chinese sentence, so no English sentence appears on the Chinese page. Training runs'
 * divergence messages (TrainerState.message) go through the same function.
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
  [/^lr \(learning rate\) must be finite and > 0, got (\S+)$/, (m) => `学习率 lr 必须是大于 0 的有限数，实际为 ${m[1]}`],
  [/^length: task '(\S+)' needs sequence length >= (\d+), got (\d+)$/, (m) => `length：任务“${m[1]}”要求序列长度 ≥ ${m[2]}，实际为 ${m[3]}`],
];
const ZH_FALLBACK = '核心拒绝了这组输入：某个参数的形状或取值不符合要求。';

/** Why a training run stopped (TrainerState.message, train/trainer.hpp), in Chinese. */
const ZH_DIVERGED: Rule[] = [
  [/^loss is (\S+)$/, (m) => `损失为 ${m[1]}`],
  [/^gradient norm is (\S+)$/, (m) => `梯度范数为 ${m[1]}`],
  [/^a parameter became non-finite/, () => '更新后有参数不再是有限的数（学习率或权重衰减过大？）'],
  [/overflow/, () => '分数溢出（对这个精度而言，缩放或输入过大）'],
];

function zhDivergence(message: string): string | null {
  const m = message.match(/^training diverged at (?:step (\d+)|the held-out evaluation after step (\d+)): (.*)$/);
  if (!m) return null;
  const why = ZH_DIVERGED.find(([re]) => re.test(m[3]!));
  const detail = why ? why[1](m[3]!.match(why[0])!) : '数值不再是有限的数';
  return m[1] ? `训练在第 ${m[1]} 步发散：${detail}` : `第 ${m[2]} 步后的留出集评估发散：${detail}`;
}

/** The message of an error thrown by the core, in `lang`. */
export function coreMessage(lang: Lang, e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  if (lang !== 'zh') return message;
  const diverged = zhDivergence(message);
  if (diverged) return diverged;
  for (const [re, out] of ZH) {
    const m = message.match(re);
    if (m) return out(m);
  }
  return ZH_FALLBACK;
}
