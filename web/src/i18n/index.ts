/** Language catalogs by code. */
import type { Catalog, Lang } from './types';
import { en } from './en';
import { zh } from './zh';

export const CATALOGS: Record<Lang, Catalog> = { en, zh };

export function catalog(lang: Lang): Catalog {
  return CATALOGS[lang];
}

export { fill, LANGS } from './types';
export type { Lang, Catalog, CommonStrings, PasteStrings, UiStrings } from './types';
