/**
 * English text of chapter 6 ("Normalizers") and its two figures. Facts: shared
 * docs/facts.md §6 (soft, hard, Gumbel-softmax, sparsemax, top-k), §9 (entropy,
 * support). {{slots}} are live numbers from the core on the chapter's example.
 */
import type { ChapterText } from '../types';

const r = String.raw;

export const en = {
  id: 'ch6',
  kicker: 'Chapter 6',
  title: 'Normalizers: soft, hard, sampled, sparse',
  lede: 'Softmax is one way to turn a row of logits into weights. Four others trade smoothness for sparsity or discreteness, or add random sampling, and they all run here on the same rows.',
  sections: [
    {
      id: 'c6-five',
      title: 'Five ways to normalize a row',
      body: r`Each normalizer maps a row of logits $z$ and a temperature $\tau > 0$ (chapter 4) to weights $p$ with $p_j \ge 0$ and $\sum_j p_j = 1$. The logits are divided by $\tau$ once, where the formulas below show $z/\tau$.

- **Softmax**, $p_j = e^{z_j/\tau} / \sum_l e^{z_l/\tau}$. Smooth and differentiable; every key gets a positive weight, however small.
- **Hard** attention, $p = \operatorname{onehot}(\arg\max_j z_j)$. All weight on the best key. The gradient is 0 almost everywhere, so it cannot be trained by backpropagation alone: the classic remedies are REINFORCE and the Gumbel-softmax below. **Tie rule:** when several keys share the maximum, qkscope picks the one with the *lowest index*. In row 3 of the example, keys 1 and 2 tie at 2.0, and hard attention gives key 1 all the weight: $ {{hard3}}$.
- **Gumbel-softmax** (Jang et al. 2017; Maddison et al. 2017) adds independent Gumbel noise $g_j = -\log(-\log u_j)$, $u_j \sim U(0, 1)$, then applies softmax: $p_j \propto e^{(z_j + g_j)/\tau}$. Each draw is random (the seed fixes it). Its **hard** variant takes the one-hot argmax of the noisy logits in the forward pass and uses the soft weights' gradient in the backward pass: the straight-through estimator.
- **Sparsemax** (Martins and Astudillo 2016) is the Euclidean projection of $z/\tau$ onto the probability simplex. It has a threshold $\theta$ with $p_j = \max(z_j/\tau - \theta, 0)$, so keys far enough below the best get *exactly* zero, and it is still differentiable almost everywhere. On row 2, $[1.2, 1, 0.9, 0.3, -0.2, -1.5]$, at $\tau = 1$ it gives $ {{sparse1}}$.
- **Top-k softmax** keeps the $k$ largest logits, sets the rest to $-\infty$, and applies softmax. With $k = 1$ it is hard attention; with $k \ge L_k$ it is plain softmax. Ties at the $k$-th place are broken by the lowest index too.`,
    },
    {
      id: 'c6-compare',
      title: 'Side by side',
      body: r`Figure 6.1 runs all five on the same three rows. The bars compare the weights of one row; the heatmaps below show every row, one per normalizer, and the table gives the entropy $H$, the effective support $e^H$ and the number of keys with non-zero weight for the selected row.

Things to try:

- Lower $\tau$: on a row with a single maximum, softmax, sparsemax and top-k move toward the hard one-hot row. On row 3, where keys 1 and 2 tie, they move toward an *even split* over the tied keys instead: softmax at $\tau = {{tieTau}}$ gives $ {{tie3}}$, while hard attention, by its tie rule, gives key 1 everything. Raise $\tau$: sparsemax keeps more keys; softmax spreads over all of them.
- Set $k = 1$: top-k softmax puts all weight on one key and agrees with hard attention, including on the tie in row 3.
- Press *Resample*: only the Gumbel-softmax weights change. Tick *hard* to see the one-hot samples.`,
    },
    {
      id: 'c6-gumbel',
      title: 'Gumbel samples follow the softmax',
      body: r`Why does adding Gumbel noise make sense? The Gumbel-max trick: the index of the largest noisy logit is a sample from the softmax of the logits,

$$\Pr\Big[\arg\max_j (z_j + g_j) = i\Big] = \frac{e^{z_i}}{\sum_l e^{z_l}}.$$

Dividing by $\tau > 0$ does not move the argmax, so hard Gumbel-softmax samples key $i$ with probability $\operatorname{softmax}(z)_i$ at any temperature; $\tau$ only controls how close the *soft* sample is to one-hot. Hard attention with Gumbel noise is therefore a random choice of key that follows the softmax probabilities, and softmax is its expected value.

Figure 6.2 checks this by counting: it draws many hard samples of the selected row, one per seed, and compares how often each key wins with the softmax probabilities.`,
    },
    {
      id: 'c6-check',
      title: "Check your understanding",
      body: "Two questions to check your reading. Choose an answer to see at once whether it is right, and why.",
    },
  ],
  fig: {
    title: 'Figure 6.1. Five normalizers on the same logits',
    caption: r`Softmax never gives an exact zero, sparsemax and top-k do; hard attention and top-k with $k = 1$ give the tied row 3 entirely to key 1, the lowest index; only the Gumbel-softmax row changes when you resample.`,
    tau: 'Temperature τ',
    k: 'Top-k: k',
    seed: 'Gumbel seed',
    resample: 'Resample',
    hard: 'Gumbel: hard (straight-through)',
    row: 'Row for the bars and the table',
    rowOption: 'Row {i}',
    bars: 'Weights of row {i} under each normalizer',
    key: 'key',
    weight: 'weight',
    logits: 'Logits of row {i}: {z}',
    colName: 'Normalizer',
    colH: 'H (nats)',
    colSupport: 'e^H',
    colNonzero: 'non-zero',
    colMax: 'max weight',
    panel: '{name}: all rows',
    names: { softmax: 'Softmax', hard: 'Hard (argmax)', gumbel_softmax: 'Gumbel-softmax', sparsemax: 'Sparsemax', topk_softmax: 'Top-k softmax' } as Record<string, string>,
  },
  fig2: {
    title: 'Figure 6.2. Hard Gumbel-softmax samples against softmax probabilities',
    caption: r`The share of samples won by each key approaches $\operatorname{softmax}(z)$ as the number of samples grows, whatever the temperature: the argmax of $z + g$ does not depend on $\tau$.`,
    samples: 'Samples (seeds 1 … n)',
    row: 'Row',
    chart: 'Row {i}: frequency of each key in hard samples vs softmax',
    freq: 'sample frequency',
    prob: 'softmax(z)',
    share: 'share',
    key: 'key',
    gap: 'Largest difference |frequency − probability|: {gap} with {n} samples',
  },
  quiz: {
    correct: "Right.",
    wrong: "Not quite.",
    questions: [
      {
        q: "Which normalizer gives exact zeros to some visible keys and is still differentiable almost everywhere?",
        options: ["Softmax", "Sparsemax", "Hard attention"],
        answer: 1,
        why: "Sparsemax is the Euclidean projection onto the simplex: keys below a threshold get exactly 0. Softmax gives every visible key a positive weight; hard attention has no useful gradient.",
      },
      {
        q: "How is hard attention usually trained?",
        options: ["By backpropagating through the argmax", "With REINFORCE, or Gumbel-softmax with the straight-through estimator", "It cannot be trained"],
        answer: 1,
        why: "The one-hot of the argmax has zero gradient almost everywhere. The straight-through variant forwards the one-hot and backpropagates the soft gradient.",
      },
    ],
  },
} satisfies ChapterText & Record<string, unknown>;

export type Ch6Text = typeof en;
