/**
 * Chapter pages by hash routing (no DOM): each chapter is its own page at "#chN", within one
 * app, so every link works the same under `vite`, `vite preview` and any static host (the
 * server never sees the hash). The anchors of the single-page edition keep working: a section
 * id ("#c3-saturation", "#worked") opens its chapter's page at that section, and any other id
 * with a chapter prefix ("c5-…", "figure-c5-…") opens that chapter there.
 */

/** What the router needs of a chapter: its anchor id ("ch3"), its section ids and its URL namespace ("c3"). */
export interface RouteTable {
  id: string;
  sections: readonly string[];
  ns: string;
}

export interface Route {
  /** Index of the chapter in the registry. */
  chapter: number;
  /** Element to scroll to on the chapter's page, or null for its top. */
  target: string | null;
}

/**
 * The chapter page (and place on it) that the address's hash names. Without a hash: the one
 * chapter whose state the query holds (a link to a figure's state from the single-page
 * edition, "?c5.lq=2"), else chapter 1.
 */
export function routeOf(hash: string, table: readonly RouteTable[], query: URLSearchParams = new URLSearchParams()): Route {
  let id = hash.replace(/^#/, '');
  try {
    id = decodeURIComponent(id);
  } catch {
    // a malformed escape: use the text as it is
  }
  if (!id) {
    const spaces = new Set([...query.keys()].filter((k) => k.includes('.')).map((k) => k.slice(0, k.indexOf('.'))));
    const only = spaces.size === 1 ? table.findIndex((c) => c.ns !== '' && spaces.has(c.ns)) : -1;
    return { chapter: Math.max(0, only), target: null };
  }
  const byId = table.findIndex((c) => c.id === id);
  if (byId >= 0) return { chapter: byId, target: null };
  const bySection = table.findIndex((c) => c.sections.includes(id));
  if (bySection >= 0) return { chapter: bySection, target: id };
  // Other ids carry their chapter's prefix ("c5-…", "figure-c5-…"); chapter 1's have none.
  const n = /(?:^|-)c(\d+)-/.exec(id)?.[1];
  const byPrefix = n ? table.findIndex((c) => c.id === `ch${n}`) : -1;
  return { chapter: Math.max(0, byPrefix), target: id };
}

/**
 * The chapter the address names without knowing any chapter's sections or namespace: "#chN"
 * (chapter ids are "ch1", "ch2", … in registry order), or no hash and no namespaced query
 * key (chapter 1). null for anything else (a section or figure anchor, a query-only link),
 * which needs the full table. The page loads that one chapter first and shows it before the
 * others have arrived.
 */
export function chapterOfAddress(hash: string, count: number, query: URLSearchParams = new URLSearchParams()): number | null {
  const id = hash.replace(/^#/, '');
  if (!id) return [...query.keys()].some((k) => k.includes('.')) ? null : 0;
  const n = /^ch([1-9]\d*)$/.exec(id)?.[1];
  return n !== undefined && Number(n) <= count ? Number(n) - 1 : null;
}
