/**
 * Chinese names of the core's scoring functions and normalizers, keyed by registry name
 * (the core's own labels are English). Shared by the tutorial's catalog (zh.ts) and the
 * <qk-scope> widget, which must stay small and so does not load the tutorial's catalogs.
 * Technical terms the Chinese literature writes in Latin letters (softmax, sparsemax,
 * Gumbel-softmax, top-k) stay so, as in docs/facts.md's glossary.
 */
export const SCORE_LABELS_ZH: Readonly<Record<string, string>> = {
  dot: '点积',
  scaled_dot: '缩放点积',
  cosine: '余弦相似度',
  bilinear: '双线性（general）',
  additive: '加性（Bahdanau）',
  linear_concat: '线性拼接（无激活函数）',
  neg_sq_euclidean: '负欧氏距离平方',
};

export const NORMALIZER_LABELS_ZH = {
  softmax: 'softmax',
  hard: '硬注意力（argmax）',
  gumbel_softmax: 'Gumbel-softmax',
  sparsemax: 'sparsemax',
  topk_softmax: 'top-k softmax',
} as const satisfies Readonly<Record<string, string>>;
