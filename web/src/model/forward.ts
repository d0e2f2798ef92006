/**
 * From view state to the core's ForwardOptions (no DOM).
 * Pipeline of the core: f(q,k) -> x scale -> + bias -> mask -> normalize(z / tau) -> weights x V.
 */
import type { ForwardOptions, ScoreName } from '../../../wasm/qkscope.js';
import type { ViewState } from './state';

/** Options for the interactive figure: softmax, top-left causal alignment, key padding by length. */
export function figureOptions(s: ViewState): ForwardOptions {
  return {
    query: s.q,
    key: s.k,
    value: s.v,
    score: s.score as ScoreName,
    seed: s.seed,
    temperature: s.tau,
    causal: s.causal,
    causalAlignment: 'top_left',
    keyLength: s.keyLength,
  };
}

/** True where the logit was masked (the core writes -Infinity into maskedScores). */
export function isMasked(maskedScore: number): boolean {
  return maskedScore === -Infinity;
}
