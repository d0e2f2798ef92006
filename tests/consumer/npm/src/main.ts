// The package as a bundler user sees it: the element (side-effect import) and the typed core.
import 'qkscope/widget/define';
import { QkScopeElement } from 'qkscope/widget';
import { loadQkScope, type AttentionResult, type ForwardResult, type QkScope } from 'qkscope';

const X = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]];

async function show(qk: QkScope): Promise<void> {
  const r: ForwardResult = qk.forward({ query: X, key: X, value: X, score: 'scaled_dot' });
  // The fast call: the bundler must ship the lazily imported tiled module and its .wasm.
  const a: AttentionResult = await qk.attention({ query: X, key: X, value: X, score: 'scaled_dot' });
  const row = (i: number) => Array.from(r.weights.data.subarray(i * r.weights.cols, (i + 1) * r.weights.cols));
  const out = document.getElementById('core')!;
  out.textContent = JSON.stringify({
    version: qk.version,
    element: document.getElementById('worked') instanceof QkScopeElement,
    weights: [0, 1, 2].map(row),
    output: Array.from(r.output.data),
    attention: Array.from(a.output.data),
    tiled: a.tiled,
  });
  out.dataset.ready = 'true';
}

loadQkScope().then(show).catch((e: unknown) => {
  document.getElementById('core')!.textContent = `error: ${String(e)}`;
});
