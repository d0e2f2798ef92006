/** Sets an attribute only when its value changes: an unchanged write still costs the browser style and layout work (native/bench/NOTES.md, "Sliders, second pass"). */
export function setAttr(el: Element, name: string, value: string): void {
  if (el.getAttribute(name) !== value) el.setAttribute(name, value);
}
