/**
 * The address bar as the single source of truth for view state. Parameters are grouped
 * by namespace: "lang" and chapter 1's playground keys have none ("score=additive"), every
 * other chapter owns "<ns>.<key>" ("c2.alpha=0.3"). A writer replaces only the keys it
 * owns, with history.replaceState (no history entries), so writers never overwrite each other.
 * A dragged slider writes deferred: the address changes once the hand rests DEFER_MS, and at
 * once when the drag ends (flushUrl on 'change'), never inside a moving drag: each
 * replaceState also makes Chromium fetch the page's icon again (an SVG, decoded on the main
 * thread: 3.5-8 ms; native/bench/NOTES.md, "Sliders, eighth pass"). Until then readQuery()
 * answers with the pending query, so readers never see a stale one.
 */

/** How long a stream of deferred writes must pause before the address is written. */
export const DEFER_MS = 250;
let pending: string | null = null;
let timer = 0;

/** The namespace of a parameter name: the part before the first '.', '' for none. */
export function namespaceOf(key: string): string {
  const dot = key.indexOf('.');
  return dot < 0 ? '' : key.slice(0, dot);
}

/** Current parameters of the address bar. */
export function readQuery(): URLSearchParams {
  return new URLSearchParams(pending ?? location.search);
}

/** Writes a deferred query now (slider released, link followed, page hidden). */
export function flushUrl(): void {
  clearTimeout(timer);
  timer = 0;
  if (pending === null) return;
  const qs = pending;
  pending = null;
  const url = `${location.pathname}${qs}${location.hash}`;
  if (url !== `${location.pathname}${location.search}${location.hash}`) history.replaceState(history.state, '', url);
}

/** Query text, readable: ',' and ';' stay as they are (matrices), the rest is escaped. */
export function queryText(entries: [string, string][]): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%2C/g, ',').replace(/%3B/g, ';');
  return entries.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&');
}

function writeAll(entries: [string, string][], defer = false): void {
  // Unprefixed keys first, then namespaces in natural order (c2 < c3 < c10).
  const order = (ns: string) => ns;
  const sorted = entries
    .map((e, i) => ({ e, i, ns: namespaceOf(e[0]) }))
    .sort((a, b) => (a.ns === b.ns ? a.i - b.i : a.ns === '' ? -1 : b.ns === '' ? 1 : order(a.ns).localeCompare(order(b.ns), 'en', { numeric: true })))
    .map((x) => x.e);
  const qs = queryText(sorted);
  pending = qs ? `?${qs}` : '';
  if (!defer) flushUrl();
  else {
    clearTimeout(timer);
    timer = window.setTimeout(flushUrl, DEFER_MS);
  }
}

/**
 * Replaces the parameters named in `owned` with `entries` (each of them one of `owned`);
 * `defer` for a change in a stream of them (a dragged slider): see DEFER_MS.
 */
export function replaceKeys(owned: readonly string[], entries: [string, string][], defer = false): void {
  const kept = [...readQuery()].filter(([k]) => !owned.includes(k));
  writeAll([...kept, ...entries], defer);
}

/** Sets (or, with null, removes) one parameter, keeping all others. */
export function setParam(key: string, value: string | null): void {
  const all = [...readQuery()].filter(([k]) => k !== key);
  if (value !== null) all.push([key, value]);
  writeAll(all);
}
