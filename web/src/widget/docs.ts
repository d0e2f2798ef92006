/**
 * Script of the widget docs page (web/widget.html): registers <qk-scope> from source
 * and logs the last attention-change event of the examples.
 */
import './define';
import type { AttentionChangeEvent } from './qk-scope';
import './docs.css';

const log = document.getElementById('ex-log');
document.addEventListener('attention-change', (e: AttentionChangeEvent) => {
  const t = e.target as HTMLElement;
  const w = e.detail.weights[0]?.map((x) => x.toFixed(4)).join(', ');
  if (log) log.textContent = `attention-change from #${t.id}: score=${e.detail.config.score}, weights row 1 = [${w}]`;
});
