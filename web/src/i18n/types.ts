/**
 * Shape of a page catalog: the strings shared by the whole page (header, footer, the
 * figure frame, chart labels, the paste box). Each chapter keeps its own prose and figure
 * strings in its folder (chapters/chN-<slug>/en.ts, zh.ts); see chapters/types.ts.
 * Prose markup (chapters/shared/rich.ts): blank line = new block; "$$...$$" display math;
 * "$...$" inline math; "- " bullets; "1. " numbered list; **bold**, *italic*;
 * {{name}} = a live value from the core. UI strings may hold {name} slots, filled by `fill()`.
 */
/** The page's languages: English and Simplified Chinese. */
export type Lang = 'en' | 'zh';
export const LANGS: readonly Lang[] = ['en', 'zh'];

export interface UiStrings {
  siteName: string;
  siteTagline: string;
  docTitle: string;
  langSwitch: string;
  tocTitle: string;
  /** aria-label of the previous/next links at the end of a chapter. */
  chapterNav: string;
  prevChapter: string;
  nextChapter: string;
  /** Table-of-contents entry of a chapter that could not be loaded. */
  chapterMissing: string;
  /** Kicker and text of a chapter still loading (its entry in the contents, its page for a moment). */
  chapterKicker: string;
  chapterLoading: string;
  /** aria-labels of a display formula and of a table too wide for the screen (they scroll sideways). */
  formulaScroll: string;
  tableScroll: string;
  skipLink: string;
  loading: string;
  loadFailed: string;
  chapterFailed: string;
  footer: string;
  coreVersion: string;
}

/** Strings every chapter's figures use. */
export interface CommonStrings {
  reset: string;
  export: string;
  exportMenu: string;
  exportPng: string;
  exportSvg: string;
  exportCsv: string;
  exportJson: string;
  exportFailed: string;
  whatToNotice: string;
  controls: string;
  seed: string;
  axisQuery: string;
  axisKey: string;
  axisDim: string;
  /** aria-label / tooltip of a heatmap cell: {row} {i}, {col} {j}: {value} */
  cellLabel: string;
  maskedCell: string;
  legendScore: string;
  legendWeight: string;
  legendValue: string;
  legendDiff: string;
  /** Shown instead of a chart when the configuration cannot be computed. */
  cannotCompute: string;
  /** Chapters' "bring your own Q/K/V" box. */
  paste: PasteStrings;
}

export interface PasteStrings {
  title: string;
  hint: string;
  label: string;
  apply: string;
  current: string;
  applied: string;
  empty: string;
  json: string;
  jsonShape: string;
  notNumber: string;
  ragged: string;
  missing: string;
  tooBig: string;
  tooSmall: string;
  range: string;
  kvRows: string;
  tooManyBlocks: string;
  unknownLabel: string;
}

export interface Catalog {
  lang: Lang;
  /** BCP 47 tag for <html lang>. */
  htmlLang: string;
  /** Name of this language in itself, for the switch. */
  selfName: string;
  ui: UiStrings;
  common: CommonStrings;
  /** Translated labels of scoring functions by registry name; the core's label is the fallback. */
  scoreLabels: Partial<Record<string, string>>;
}

/** Fills {name} slots of a UI string. Unknown slots stay visible so they get noticed. */
export function fill(template: string, vars: Record<string, string | number>): string {
  return template.replace(/\{(\w+)\}/g, (m, k: string) => (k in vars ? String(vars[k]) : m));
}
