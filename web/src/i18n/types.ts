/**
 * Shape of a language catalog: every UI string and all tutorial prose, as data.
 * Prose sections are {id, title, body} (after Transformer Explainer's textbookPages.ts).
 * Body markup (see chapters/rich.ts): blank line = new block; "$$...$$" display math;
 * "$...$" inline math; "- " bullets; "1. " numbered list; **bold**, *italic*;
 * {{name}} = a live value from the core, filled in before rendering.
 * UI strings may hold {name} slots, filled by `fill()`.
 */
import type { Lang } from '../model/state';

export interface Section {
  id: string;
  title: string;
  body: string;
}

export interface ChapterText {
  id: string;
  kicker: string;
  title: string;
  lede: string;
  sections: Section[];
}

export interface UiStrings {
  siteName: string;
  siteTagline: string;
  docTitle: string;
  langSwitch: string;
  tocTitle: string;
  skipLink: string;
  loading: string;
  loadFailed: string;
  footer: string;
  coreVersion: string;
}

export interface FigureStrings {
  title: string;
  caption: string;
  controls: string;
  score: string;
  formula: string;
  temperature: string;
  temperatureHint: string;
  causal: string;
  causalHint: string;
  keyLength: string;
  keyLengthValue: string;
  seed: string;
  seedHint: string;
  noParams: string;
  scaleUsed: string;
  reset: string;
  sizes: string;
  lq: string;
  lk: string;
  dq: string;
  dk: string;
  dv: string;
  inputs: string;
  inputsHint: string;
  matrixQ: string;
  matrixK: string;
  matrixV: string;
  cellAria: string;
  invalidNumber: string;
  scoresTitle: string;
  scoresNote: string;
  weightsTitle: string;
  weightsNote: string;
  outputTitle: string;
  outputNote: string;
  shape: string;
  axisQuery: string;
  axisKey: string;
  axisDim: string;
  cellLabel: string;
  maskedCell: string;
  maskedLegend: string;
  legendScore: string;
  legendWeight: string;
  legendValue: string;
  statsTitle: string;
  statsHint: string;
  statsQuery: string;
  statsMax: string;
  statsArgmax: string;
  statsEntropy: string;
  statsSupport: string;
  statsEmpty: string;
  errorTitle: string;
  errorStale: string;
  errorSameDim: string;
}

export interface Catalog {
  lang: Lang;
  /** BCP 47 tag for <html lang>. */
  htmlLang: string;
  /** Name of this language in itself, for the switch. */
  selfName: string;
  ui: UiStrings;
  figure: FigureStrings;
  /** Translated labels of scoring functions by registry name; the core's label is the fallback. */
  scoreLabels: Partial<Record<string, string>>;
  chapter1: ChapterText;
}

/** Fills {name} slots of a UI string. Unknown slots stay visible so they get noticed. */
export function fill(template: string, vars: Record<string, string | number>): string {
  return template.replace(/\{(\w+)\}/g, (m, k: string) => (k in vars ? String(vars[k]) : m));
}
