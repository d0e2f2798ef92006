/**
 * What a chapter is. Each chapter lives in its own folder chapters/chN-<slug>/ with its
 * prose catalogs (en.ts, zh.ts) and its figures, and is listed by one line in
 * chapters/index.ts. The page shell builds the chapter's article (kicker, title, lede,
 * sections with their prose) from the catalog, then calls `render` so the chapter can put
 * its figures into its sections. See web/CHAPTERS.md.
 */
import type { QkScope } from '@qkscope/wasm';
import type { Catalog, Lang } from '../i18n';
import type { FieldSpecs, ValuesOf } from '../model/url-state';
import type { Store } from './shared/store';
import type { Vars } from './shared/rich';

/** One prose section: an anchor id (unique on the page), a title and a body (rich.ts markup). */
export interface Section {
  id: string;
  title: string;
  body: string;
}

/** The prose of a chapter in one language. Chapters extend it with their figure strings. */
export interface ChapterText {
  /** Anchor of the chapter, e.g. "ch2" (the same in every language). */
  id: string;
  /** "Chapter 2" */
  kicker: string;
  title: string;
  lede: string;
  sections: Section[];
}

/** What the shell hands to a chapter while rendering it. */
export interface ChapterContext<T extends ChapterText = ChapterText> {
  qk: QkScope;
  lang: Lang;
  /** This chapter's catalog in the current language. */
  t: T;
  /** The page catalog: `ui`, `common` (shared figure/chart strings) and `scoreLabels`. */
  cat: Catalog;
  /**
   * The chapter's state, read from the URL under its namespace ("<ns>.<key>") with
   * validation and clamping, written back on every change. Call once per field table.
   */
  state<S extends FieldSpecs>(spec: S, normalize?: (v: ValuesOf<S>) => ValuesOf<S>): Store<S>;
  /** Runs `fn` once, when `el` first comes near the viewport (for expensive figures). */
  whenVisible(el: Element, fn: () => void): void;
}

/** The article the shell built for the chapter. */
export interface ArticleView {
  el: HTMLElement;
  /** The <section> with this id; append figures to it (throws for an unknown id). */
  section(id: string): HTMLElement;
}

export interface Chapter<T extends ChapterText = ChapterText> {
  /** Anchor id, equal to text[lang].id, e.g. "ch2". */
  id: string;
  /** URL namespace of the chapter's state, e.g. "c2"; '' for plain keys (chapter 1, whose links predate namespaces). */
  ns: string;
  /** Prose and strings per language. */
  text: Record<Lang, T>;
  /** Live numbers for the {{slots}} of the prose (optional). */
  vars?(ctx: ChapterContext<T>): Vars;
  /** Adds the figures to the built article. */
  render(ctx: ChapterContext<T>, view: ArticleView): void;
}

/** Identity helper that keeps the chapter's text type: `export default defineChapter({...})`. */
export function defineChapter<T extends ChapterText>(c: Chapter<T>): Chapter<T> {
  return c;
}
