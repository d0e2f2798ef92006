/** Labels are written at the latest this long after the first update since the last pass,
 * frame or not (ms; timers may be throttled further in a background tab). */
const LABELS_LATEST_MS = 250;

/**
 * When a heatmap's cells get their aria-labels (heatmap.ts): after the frame that shows their
 * new values, once per frame however many updates came before it. A label is not drawn, and
 * building and writing them took ~2 ms of the ~6 ms of script per input of chapter 9's heads
 * slider (256 labels; native/bench/NOTES.md, "Sliders, tenth pass"). A cell that has focus is
 * labelled at once by the map, and a cell taking focus asks for the pass first (`flush`), so a
 * screen reader never reads an old value. A timer bounds the wait: a browser that renders no
 * frame for a while (headless Chromium on a loaded machine stalled for seconds, and axe-core
 * then found every cell of the tutorial without a name) still gets the labels.
 */
export class LabelPass {
  private due = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** A message posted from a frame callback arrives after that frame is painted. */
  private readonly channel = typeof MessageChannel === 'function' ? new MessageChannel() : null;

  constructor(private readonly write: () => void) {
    if (this.channel) this.channel.port1.onmessage = () => this.flush();
  }

  /** Writes the labels after the next frame, or after LABELS_LATEST_MS if no frame comes first. */
  schedule(): void {
    if (this.due) return;
    this.due = true;
    // No frame comes for a hidden page (nor without these APIs): then now, after this task.
    if (!this.channel || typeof requestAnimationFrame !== 'function' || document.visibilityState === 'hidden') {
      queueMicrotask(() => this.flush());
      return;
    }
    requestAnimationFrame(() => this.channel!.port2.postMessage(null));
    // Cleared by the flush after the frame, so an old timer never writes a later update's labels
    // before its frame (a dragged slider would pay for them).
    this.timer = setTimeout(() => this.flush(), LABELS_LATEST_MS);
  }

  /** Writes them now if a pass is due. */
  flush(): void {
    if (!this.due) return;
    this.due = false;
    clearTimeout(this.timer);
    this.write();
  }
}
