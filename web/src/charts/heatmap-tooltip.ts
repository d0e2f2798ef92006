/**
 * Where a heatmap's tooltip goes: centred under the cell's column, clamped to the plot, just
 * below the grid (it never hides a row the reader is comparing). Reads layout once per call.
 */
export function placeTooltip(tooltip: HTMLElement, cell: Element, grid: Element): void {
  const box = cell.getBoundingClientRect();
  const host = tooltip.parentElement!.getBoundingClientRect();
  const tip = tooltip.getBoundingClientRect();
  const bottom = grid.getBoundingClientRect().bottom;  // every read before the writes
  const left = Math.max(0, Math.min(host.width - tip.width, box.left - host.left + box.width / 2 - tip.width / 2));
  tooltip.style.left = `${left}px`;
  tooltip.style.top = `${bottom - host.top + 2}px`;
}
