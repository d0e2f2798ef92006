/**
 * Shadow-root styles of <qk-scope>, adopted as a constructable stylesheet
 * (adoptedStyleSheets): a strict CSP without style-src 'unsafe-inline' blocks
 * <style> elements but not these. Colours are CSS custom properties on the host
 * (--qk-*), with light and dark defaults (prefers-color-scheme, or theme="dark").
 */
export const CSS = `
:host {
  --qk-fg: #1b1f24; --qk-bg: #ffffff; --qk-muted: #57606a; --qk-border: #d0d7de;
  --qk-accent: #0969da; --qk-error-fg: #8a1c10; --qk-error-bg: #fff1ef;
  --qk-hatch-a: #e8e8e8; --qk-hatch-b: #bdbdbd;
  display: block; color: var(--qk-fg); background: var(--qk-bg);
  font: 14px/1.4 var(--qk-font, system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "PingFang SC", sans-serif);
  font-variant-numeric: tabular-nums; border: 1px solid var(--qk-border); border-radius: 8px;
  padding: 12px; max-width: 100%; overflow-x: auto; box-sizing: border-box;
}
:host([hidden]) { display: none; }
@media (prefers-color-scheme: dark) {
  :host(:not([theme="light"])) {
    --qk-fg: #e6edf3; --qk-bg: #0d1117; --qk-muted: #9da7b3; --qk-border: #30363d;
    --qk-accent: #4493f8; --qk-error-fg: #ffb4a8; --qk-error-bg: #3b1410;
    --qk-hatch-a: #2b2f36; --qk-hatch-b: #4a505a;
  }
}
:host([theme="dark"]) {
  --qk-fg: #e6edf3; --qk-bg: #0d1117; --qk-muted: #9da7b3; --qk-border: #30363d;
  --qk-accent: #4493f8; --qk-error-fg: #ffb4a8; --qk-error-bg: #3b1410;
  --qk-hatch-a: #2b2f36; --qk-hatch-b: #4a505a;
}
[hidden] { display: none !important; }
.controls { display: flex; flex-wrap: wrap; gap: 8px 16px; margin-bottom: 10px; }
.control { display: inline-flex; flex-wrap: wrap; align-items: center; gap: 6px; color: var(--qk-muted); max-width: 100%; }
select { max-width: 100%; }
select, input { font: inherit; color: var(--qk-fg); background: var(--qk-bg); border: 1px solid var(--qk-border); border-radius: 4px; padding: 2px 4px; }
input[type=number] { width: 5em; }
select:focus-visible, input:focus-visible, .cell:focus-visible { outline: 2px solid var(--qk-accent); outline-offset: 1px; }
.figure { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
figure { margin: 0; }
figcaption { font-weight: 600; margin-bottom: 4px; }
.plot { display: grid; grid-template-columns: auto auto auto; gap: 2px 4px; align-items: center; width: max-content; }
.axis { color: var(--qk-muted); font-size: 0.8em; }
.axis-x { grid-area: 1 / 3; justify-self: center; }
.axis-y { grid-area: 3 / 1; writing-mode: vertical-rl; transform: rotate(180deg); align-self: center; }
.axis-y:lang(zh) { transform: none; }
.ticks { color: var(--qk-muted); display: grid; gap: 2px; }
.ticks span { font-size: 0.86em; }
.ticks-x { grid-area: 2 / 3; text-align: center; }
.ticks-y { grid-area: 3 / 2; }
.ticks-y span { height: var(--qk-cell-size, 3.4em); display: flex; align-items: center; justify-content: flex-end; }
.grid { grid-area: 3 / 3; display: grid; gap: 2px; width: max-content; }
.row { display: contents; }
.cell { height: var(--qk-cell-size, 3.4em); display: flex; align-items: center; justify-content: center; border-radius: 3px; font-size: 0.86em; cursor: default; white-space: nowrap; }
.cell.masked { background: repeating-linear-gradient(45deg, var(--qk-hatch-a) 0 4px, var(--qk-hatch-b) 4px 6px); }
.legend { display: flex; align-items: center; gap: 6px; margin-top: 6px; font-size: 0.8em; color: var(--qk-muted); }
.legend-bar { display: inline-block; width: 8em; height: 0.7em; border-radius: 2px; }
.legend-title { color: var(--qk-fg); }
input[type=range] { width: 7.5em; accent-color: var(--qk-accent); }
.summary { margin: 8px 0 0; color: var(--qk-muted); }
.error, .alert { margin: 8px 0 0; padding: 6px 8px; border-radius: 4px; color: var(--qk-error-fg); background: var(--qk-error-bg); }
.error p, .alert p { margin: 0; }
.status { color: var(--qk-muted); }
`;

let sheet: CSSStyleSheet | null = null;

/** Applies the styles to a shadow root: one shared constructable sheet, or a <style> as a fallback. */
export function adoptStyles(root: ShadowRoot): void {
  if ('adoptedStyleSheets' in root && typeof CSSStyleSheet === 'function' && 'replaceSync' in CSSStyleSheet.prototype) {
    if (!sheet) {
      sheet = new CSSStyleSheet();
      sheet.replaceSync(CSS);
    }
    root.adoptedStyleSheets = [sheet];
  } else {
    const style = document.createElement('style');
    style.textContent = CSS;
    root.append(style);
  }
}
