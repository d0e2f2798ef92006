/**
 * Rebuilding the page under the reader (a chapter that arrives while its loading page is
 * shown) must not lose their focus or close the contents panel they opened. `snapshot`
 * notes both; the function it returns puts them back on the new page: the contents panel
 * reopened, focus on the same control (same test id or link target) in the header or the
 * contents, or on the new page's title when it was on the loading page or nowhere (on the
 * contents button when the panel is open).
 */
export function snapshotFocus(root: HTMLElement): () => void {
  const active = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  const main = root.querySelector('main');
  const onPage = !active || active === document.body || (main?.contains(active) ?? false);
  const testid = active?.dataset.testid;
  const href = active?.closest('a')?.getAttribute('href');
  const open = root.querySelector('.toc-toggle')?.getAttribute('aria-expanded') === 'true';
  return () => {
    const toggle = root.querySelector<HTMLButtonElement>('.toc-toggle');
    const reopen = () => open && toggle?.getAttribute('aria-expanded') === 'false' && toggle.click();
    if (onPage) {
      // Focus first: focus moving outside the header and the contents closes the panel
      // (shell.ts contentsDisclosure). With the panel open, its button holds focus, not the
      // title underneath.
      if (open) toggle?.focus({ preventScroll: true });
      else focusTitle(root);
      reopen();
    } else if (active && !active.isConnected) {
      reopen(); // first: a link in a closed panel cannot take focus
      const now = root.querySelector('main');
      const same = (testid ? root.querySelector<HTMLElement>(`[data-testid="${CSS.escape(testid)}"]`) : null) ??
        (href ? [...root.querySelectorAll<HTMLElement>('a[href]')].find((a) => a.getAttribute('href') === href && !now?.contains(a)) : undefined);
      same?.focus({ preventScroll: true });
    } else reopen();
  };
}

/** A new page: screen readers start at its title (the main region while it is loading). */
export function focusTitle(root: HTMLElement): void {
  const target = root.querySelector<HTMLElement>('main h1') ?? root.querySelector<HTMLElement>('main');
  if (!target) return;
  if (target.tagName === 'H1') target.tabIndex = -1;
  target.focus({ preventScroll: true });
}
