// tests/e2e/load-timing.mjs — what a page load is timed by, shared by the chapter-1 budget test
// (main-thread.test.mjs) and `npm run bench:load` (scripts/bench-load.mjs).

/**
 * Init script (runs before any page script): records, in ms since navigation start,
 * `window.__readyAt` when #app gets its data-ready attribute (the page is built and its
 * controls answer) and `window.__paintedAt` at the end of the first frame after that (a
 * timeout queued from that frame's requestAnimationFrame runs once the frame is drawn).
 */
export function recordReady() {
  new MutationObserver((_, obs) => {
    if (!document.getElementById('app')?.dataset.ready) return;
    window.__readyAt = performance.now();
    obs.disconnect();
    requestAnimationFrame(() => setTimeout(() => { window.__paintedAt = performance.now(); }));
  }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-ready'] });
}
