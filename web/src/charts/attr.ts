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

/** The last value each element was given by setOwnAttr, per attribute (null: removed). */
const own = new WeakMap<Element, Map<string, string | null>>();

/**
 * setAttr for attributes that only the caller writes: the value last written is remembered
 * instead of read back, which costs a DOM call per attribute (a heatmap's cells read back
 * ~2,500 attributes per input of chapter 9's L slider; native/bench/NOTES.md, "Sliders, ninth
 * pass"). `null` removes the attribute.
 */
export function setOwnAttr(el: Element, name: string, value: string | null): void {
  let m = own.get(el);
  if (!m) own.set(el, (m = new Map()));
  const last = m.get(name);
  if (last === value || (last === undefined && el.getAttribute(name) === value)) {
    if (last === undefined) m.set(name, value);
    return;
  }
  m.set(name, value);
  if (value === null) el.removeAttribute(name);
  else el.setAttribute(name, value);
}
