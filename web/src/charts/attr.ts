/** Sets an attribute only when its value changes: an unchanged write still costs the browser style and layout work (native/bench/NOTES.md, "Sliders, second pass"). */
export function setAttr(el: Element, name: string, value: string): void {
  if (el.getAttribute(name) !== value) el.setAttribute(name, value);
}

/**
 * Sets an element's text by changing the data of its one Text node, only when it changes.
 * `textContent =` replaces the node, and the browser then rebuilds and lays out the text from
 * scratch: ~4 ms for 256 heatmap cells against ~0.1 ms (native/bench/NOTES.md, "Sliders, sixth pass").
 */
export function setText(el: Element, value: string): void {
  const t = el.firstChild;
  if (t !== null && t === el.lastChild && t.nodeType === 3) {
    if ((t as Text).data !== value) (t as Text).data = value;
  } else if (el.textContent !== value) el.textContent = value;
}
