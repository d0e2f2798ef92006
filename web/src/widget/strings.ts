/**
 * UI strings of <qk-scope> in English and Chinese (no DOM). Kept apart from the
 * tutorial's catalogs (web/src/i18n/) so the embeddable script stays small.
 */
import type { ConfigProblem, WidgetLang } from './config';
import { NORMALIZER_LABELS_ZH, SCORE_LABELS_ZH } from '../i18n/labels-zh';

/** A rejected attribute value as echoed in the message: at most 60 characters (an attribute may hold megabytes). */
const shown = (s: string): string => (s.length > 60 ? `${s.slice(0, 59)}…` : s);

export interface WidgetStrings {
  label: string;
  score: string;
  temperature: string;
  mask: string;
  normalizer: string;
  view: string;
  seed: string;
  masks: Record<'none' | 'causal' | 'padding', string>;
  views: Record<'heatmap' | 'steps' | 'compare', string>;
  /** Step titles; `weights` names the normalizer in use. */
  steps: { raw: string; scores: string; weights: (normalizer: string) => string; output: string };
  /** A scoring function's or normalizer's name from the core's registry in this language (the core's own label otherwise). */
  scoreLabel: (name: string, coreLabel: string) => string;
  normalizerLabel: (name: string, coreLabel: string) => string;
  /** Name of the exact-value box beside the temperature slider. */
  temperatureValue: string;
  /** Legend titles: what the colours encode. */
  legend: { weight: string; score: string; value: string };
  query: string;
  key: string;
  dim: string;
  masked: string;
  loading: string;
  loadFailed: string;
  computeFailed: string;
  cell: (m: string, i: number, j: number, value: string) => string;
  grid: (m: string, rows: number, cols: number) => string;
  problem: (p: ConfigProblem) => string;
}

const reasonEn: Record<ConfigProblem['reason'], string> = {
  choice: 'expected one of',
  integer: 'expected an integer in',
  positive: 'expected a number',
  json: 'expected JSON such as',
  shape: 'expected',
};
const reasonZh: Record<ConfigProblem['reason'], string> = {
  choice: '应为以下之一：',
  integer: '应为整数，范围',
  positive: '应为数值',
  json: '应为 JSON，例如',
  shape: '应为',
};

export const STRINGS: Record<WidgetLang, WidgetStrings> = {
  en: {
    label: 'Attention weights',
    score: 'Score',
    temperature: 'Temperature τ',
    mask: 'Mask',
    normalizer: 'Normalizer',
    view: 'View',
    seed: 'Seed',
    masks: { none: 'none', causal: 'causal', padding: 'key padding' },
    views: { heatmap: 'weights', steps: 'step by step', compare: 'compare scores' },
    steps: { raw: '1. raw scores f(q, k)', scores: '2. scaled and masked logits', weights: (n) => `3. weights = ${n}`, output: '4. output = weights × V' },
    scoreLabel: (_name, coreLabel) => coreLabel,
    normalizerLabel: (_name, coreLabel) => coreLabel,
    temperatureValue: 'Temperature τ, exact value',
    legend: { weight: 'weight', score: 'score', value: 'value' },
    query: 'query',
    key: 'key',
    dim: 'dim',
    masked: 'masked',
    loading: 'Loading the attention core…',
    loadFailed: 'Could not load the attention core: ',
    computeFailed: 'Could not compute attention: ',
    cell: (m, i, j, value) => `${m} row ${i}, column ${j}: ${value}`,
    grid: (m, rows, cols) => `${m}, ${rows} × ${cols}`,
    problem: (p) => `${p.attribute}="${shown(p.given)}" is not valid (${reasonEn[p.reason]} ${p.expected}); using ${p.used}.`,
  },
  zh: {
    label: '注意力权重',
    score: '评分函数',
    temperature: '温度系数 τ',
    mask: '掩码',
    normalizer: '归一化',
    view: '视图',
    seed: '随机种子',
    masks: { none: '无', causal: '因果', padding: '键填充' },
    views: { heatmap: '权重', steps: '逐步', compare: '比较评分函数' },
    steps: { raw: '1. 原始分数 f(q, k)', scores: '2. 缩放并掩码后的 logits', weights: (n) => `3. 权重 = ${n}`, output: '4. 输出 = 权重 × V' },
    scoreLabel: (name, coreLabel) => SCORE_LABELS_ZH[name] ?? coreLabel,
    normalizerLabel: (name, coreLabel) => (NORMALIZER_LABELS_ZH as Readonly<Record<string, string>>)[name] ?? coreLabel,
    temperatureValue: '温度系数 τ 的精确值',
    legend: { weight: '权重', score: '分数', value: '数值' },
    query: '查询',
    key: '键',
    dim: '维',
    masked: '已掩码',
    loading: '正在加载注意力核心…',
    loadFailed: '无法加载注意力核心：',
    computeFailed: '无法计算注意力：',
    cell: (m, i, j, value) => `${m} 第 ${i} 行第 ${j} 列：${value}`,
    grid: (m, rows, cols) => `${m}，${rows} × ${cols}`,
    problem: (p) => `${p.attribute}="${shown(p.given)}" 无效（${reasonZh[p.reason]} ${p.expected}）；改用 ${p.used}。`,
  },
};
