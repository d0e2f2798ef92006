/**
 * Script of the widget docs page (web/widget.html): registers <qk-scope> from source,
 * lists the accepted score and normalizer names from the core's registries (the same
 * lists the element validates against) and logs the last attention-change event.
 */
import './define';
import type { AttentionChangeEvent } from './qk-scope';
import { loadCore } from './core';
import { registryOf } from './config';
import './docs.css';

const log = document.getElementById('ex-log');
document.addEventListener('attention-change', (e: AttentionChangeEvent) => {
  const t = e.target as HTMLElement;
  const w = e.detail.weights[0]?.map((x) => x.toFixed(4)).join(', ');
  if (log) log.textContent = `attention-change from #${t.id}: score=${e.detail.config.score}, weights row 1 = [${w}]`;
});

void loadCore().then((core) => {
  const reg = registryOf(core);
  for (const [key, names] of [['score', reg.scores], ['normalizer', reg.normalizers]] as const) {
    const cell = document.querySelector(`[data-registry="${key}"]`);
    if (cell) cell.textContent = names.join(' | ');
  }
});
