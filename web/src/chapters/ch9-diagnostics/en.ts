/**
 * English text of chapter 9 ("Diagnostics and choosing"): per-head, per-row entropy, max
 * weight and effective support from multiHeadForward; what too diffuse and too focused mean;
 * weights as relative match strengths; the selection guide. Facts: docs/facts.md §9.
 */
import type { ChapterText } from '../types';

const r = String.raw;

export const en = {
  id: 'ch9',
  kicker: 'Chapter 9',
  title: 'Diagnostics, and choosing a scoring function',
  lede: 'Three numbers per row tell you most of what an attention map is doing. This chapter computes them for every head of a small multi-head layer, explains what "too diffuse" and "too focused" usually point to, and ends with a practical guide to choosing a scoring function.',
  sections: [
    {
      id: 'c9-measures',
      title: 'Three numbers per row',
      body: r`Each row $w_i$ of an attention map is a distribution over the $L_k$ keys. Three summaries describe its shape:

- the **entropy** $H_i = -\sum_j w_{ij} \log w_{ij}$, in nats: $0$ when one key takes all the weight, $\log L_k$ when the weights are uniform;
- the **max weight** $\max_j w_{ij}$: between $1/L_k$ (uniform) and $1$ (one-hot);
- the **effective support** $e^{H_i}$: the number of keys a uniform distribution with the same entropy would spread over, between $1$ and $L_k$.

Because $\log L_k$ changes with the sequence length, compare entropies across lengths as the fraction $H_i / \log L_k$. A row with $e^{H_i} \approx 3$ behaves roughly like "attend to about three keys", whatever $L_k$ is.`,
    },
    {
      id: 'c9-heads',
      title: 'Every head, every row',
      body: r`The figure runs qkscope's multi-head attention on a short seeded sequence: $L$ tokens of width 16, each head with its own seeded projections to $d_k = d_v = 8$. The three heatmaps have one row per head and one column per query; the table averages each head over its rows. Try these:

- Raise the input scale $\sigma$: logits grow like $\sigma^2$, rows collapse onto one key, and the entropy map goes dark.
- Then raise the temperature $\tau$ above 1: the rows spread out again.
- Switch to cosine similarity: its logits are confined to $[-1, 1]$, so at $\tau = 1$ two weights of a row differ by a factor of at most $e^2 \approx 7.4$ ($e^{2/\tau}$ in general), and the rows stay close to uniform whatever the input scale.
- Switch to plain dot product: without the $1/\sqrt{d_k}$ factor the rows are sharper than with scaled dot.`,
    },
    {
      id: 'c9-reading',
      title: 'Reading the numbers',
      body: r`**Entropy near $\log L_k$ everywhere** (diffuse attention): every key gets about the same weight, so the output is close to the mean of the values and the layer mixes without choosing. Check the scale first: logits that are too small, because of a scale divided twice, a tiny initialisation, or a bounded score such as cosine without a learned temperature, give exactly this picture.

**Entropy near 0, max weight near 1** (over-focused attention): each query copies one value. Sometimes that is the job (a head that attends to the previous token), but across all heads and early in training it usually means the logits are too large: the softmax is saturated and its gradient vanishes. Try $\tau > 1$, and check the $1/\sqrt{d_k}$ scaling and the size of the inputs.

In between is where most useful heads live; the aim is not a particular value, but to notice a head whose every row sits at one extreme.

One warning applies to all of this. Attention weights are **relative match strengths, not confidences**. A weight of $0.9$ says that this key matched much better than the others in *this* row; it does not say the model is 90% sure of anything. Softmax ignores a constant added to the row, so a row of poor matches can still put $0.9$ on the least poor one, and a query with nothing relevant to read must still spread a total weight of exactly 1 somewhere.`,
    },
    {
      id: 'c9-choose',
      title: 'Choosing a scoring function',
      body: r`What practitioners report, as a starting point rather than a rule:`,
    },
    {
      id: 'c9-check',
      title: "Check your understanding",
      body: "Two questions to check your reading. Choose an answer to see at once whether it is right, and why.",
    },
  ],
  fig: {
    title: 'Figure 9.1. Entropy, max weight and effective support, per head and per row',
    caption: r`Each cell is one query row of one head. Dark cells in the entropy map are focused rows, bright ones diffuse; the max-weight map is roughly its mirror image. With the default inputs the heads differ from each other but none is stuck at an extreme; push the input scale up and they all collapse together, then let $\tau$ bring them back. The verdict column only flags extremes; it is a prompt to check the scale or the temperature, not a judgement of the head.`,
    heads: 'Heads H',
    L: 'Tokens L',
    score: 'Scoring function',
    sigma: 'Input scale σ',
    sigmaHint: 'Multiplies the inputs; logits grow like σ².',
    tau: 'Temperature τ',
    tauHint: 'τ > 1 flattens, τ < 1 sharpens',
    head: 'Weights of head',
    entropyTitle: 'Entropy H / log L_k',
    maxTitle: 'Max weight',
    supportTitle: 'Effective support e^H / L_k',
    weightsTitle: 'Weights of head {h}',
    axisHead: 'head',
    legendFraction: 'fraction',
    cellEntropy: 'head {h}, query {i}: H = {H} nats, {f} of log L_k',
    cellMax: 'head {h}, query {i}: max weight {m}',
    cellSupport: 'head {h}, query {i}: e^H = {s} of {L} keys',
    colHead: 'head',
    colH: 'mean H (nats)',
    colHFrac: 'H / log L_k',
    colMax: 'mean max weight',
    colSupport: 'mean e^H',
    colVerdict: 'verdict',
    verdict: { diffuse: 'diffuse: check the scale', focused: 'over-focused: try τ > 1', between: 'in between' },
    tableCaption: 'Per-head means over the query rows',
    logL: 'log L_k = {v} nats',
  },
  guide: {
    caption: 'Which scoring function to try first',
    colTask: 'task',
    colScore: 'start with',
    colWhy: 'why',
    rows: [
      ['General NLP and vision', 'Scaled dot product', 'The default of the Transformer; the best hardware and kernel support (fused, tiled, mixed precision).'],
      ['Cross-modal alignment (e.g. text vs image features)', 'Bilinear, q^T W k', 'The two sides live in different spaces, possibly of different widths; W learns the map between them.'],
      ['Retrieval and vector search', 'Cosine similarity', 'Matches cosine / inner-product indexes (FAISS-style); norms do not dominate. Add a learned temperature: raw cosine logits are too flat.'],
      ['Graphs (GAT-style)', 'Additive-style score, adjacency as a mask', 'A small learned score per edge; non-edges get −∞ before the softmax. Prefer the additive form of GATv2: the original GAT score ranks neighbours the same way for every node (chapter 10).'],
    ],
    after: 'Whatever you pick, keep a scaled-dot baseline with everything else fixed, and compare on a small ablation first: claimed gains of exotic scoring functions often shrink against a well-tuned baseline.',
  },
  quiz: {
    correct: "Right.",
    wrong: "Not quite.",
    questions: [
      {
        q: "A row's entropy is close to $\\log L_k$. What does that suggest?",
        options: ["Over-focused attention: try τ > 1", "Diffuse attention: check the scale", "Nothing unusual"],
        answer: 1,
        why: "$\\log L_k$ is the entropy of uniform weights: the row barely distinguishes its keys.",
      },
      {
        q: "One key gets weight 0.9. What does that tell you?",
        options: ["The model is 90% confident", "That key matches best relative to the other keys of the row", "The prediction is right with probability 0.9"],
        answer: 1,
        why: "Weights are relative match strengths within a row, not confidences.",
      },
    ],
  },
} satisfies ChapterText & Record<string, unknown>;

export type Ch9Text = typeof en;
