/** Language catalogs by code. */
import type { Lang } from '../model/state';
import type { Catalog } from './types';
import { en } from './en';
import { zh } from './zh';

export const CATALOGS: Record<Lang, Catalog> = { en, zh };

export function catalog(lang: Lang): Catalog {
  return CATALOGS[lang];
}

export { fill } from './types';
export type { Catalog, CommonStrings, PasteStrings, UiStrings } from './types';
