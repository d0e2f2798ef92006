/**
 * The character models of the training channel (protocol.ts, TrainOp 'charLoad' and
 * 'charPredict'): trained next-character models (QkScopeTrain.loadCharModel,
 * wasm/types/train.d.ts) kept in the worker by scoring function, so the page sends only the
 * reader's text on every keystroke and gets the predictions and every layer's and head's
 * attention back (typed arrays, transferred).
 */
import type { CharModel, CharModelWeights, QkScopeTrain } from '@qkscope/wasm';
import type { CharInfo, CharResult } from './protocol';

export class CharModels {
  private readonly models = new Map<string, CharModel>();

  /** (Re)loads the model of `key` from its parsed weights file; the core's RangeError names a bad field. */
  load(tr: QkScopeTrain, key: string, weights: CharModelWeights): CharInfo {
    const m = tr.loadCharModel(weights);
    this.models.get(key)?.delete();
    this.models.set(key, m);
    return { score: m.score, vocabulary: m.vocabulary, context: m.context, layers: m.layers, heads: m.heads, width: m.width };
  }

  /** Predictions and attention (every layer, every head) after each character of `text`. */
  predict(key: string, text: string): CharResult {
    const m = this.models.get(key);
    if (!m) throw new RangeError(`train: no character model '${key}' (load it first)`);
    const p = m.predict(text);
    const attention = [];
    for (let l = 0; l < m.layers; l++) for (let hd = 0; hd < m.heads; hd++) attention.push(p.attention(l, hd));
    return { text: p.text, next: p.next, attention };
  }
}
