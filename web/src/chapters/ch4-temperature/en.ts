/**
 * English text of chapter 4 ("Temperature") and Figure 4.1. Facts: shared
 * docs/facts.md §2 (extras: tau > 1 flatter, < 1 sharper), §4 (entropy, max weight,
 * effective support exp(H); weights are relative match strengths). {{slots}} are live
 * numbers from the core on the chapter's example.
 */
import type { ChapterText } from '../types';

const r = String.raw;

export const en = {
  id: 'ch4',
  kicker: 'Chapter 4',
  title: 'Temperature',
  lede: 'One number, divided into every logit before the softmax, decides whether attention spreads over many keys or snaps onto one. This chapter measures that with entropy and effective support, and shows what the extremes become.',
  sections: [
    {
      id: 'c4-what',
      title: r`What $\tau$ does`,
      body: r`After the scores are scaled, biased and masked, the normalizer turns each row of logits $z$ into weights. The temperature $\tau > 0$ divides the logits first:

$$p_j = \frac{e^{z_j/\tau}}{\sum_{l} e^{z_l/\tau}}.$$

Dividing by $\tau$ stretches or squeezes the *gaps* between logits. Two keys whose logits differ by $\Delta$ get weights in the ratio $e^{\Delta/\tau}$:

- $\tau > 1$ shrinks the gaps: the weights become **flatter**, closer to uniform.
- $\tau < 1$ widens the gaps: the weights become **sharper**, concentrated on the best keys.
- $\tau = 1$ leaves the logits alone; with scaled dot-product scores this is the Transformer default.

The ranking of the keys never changes: the best key stays the best at every temperature. Only how much more it gets than the others changes.

In the example used throughout this chapter, row 1 has the logits $[2, 1, 0.5, 0, -0.5, -1]$. At $\tau = 1$ its weights are $ {{w1}}$.`,
    },
    {
      id: 'c4-measure',
      title: 'Measuring sharpness: entropy, max weight, support',
      body: r`Three numbers summarise how concentrated a row of weights is.

- The **entropy** $H = -\sum_j p_j \log p_j$ (in nats) is 0 for a one-hot row and $\log L_k$ for a uniform row over $L_k$ keys.
- The **max weight** $\max_j p_j$ lies between $1/L_k$ and 1.
- The **effective support** $e^{H}$ reads the entropy as a number of keys: a row spread evenly over $m$ keys has $H = \log m$, so $e^H = m$. It is 1 for a one-hot row and $L_k$ for a uniform row.

For row 1 at $\tau = 1$: $H = {{h1}}$ nats (the maximum for six keys is $\log 6 = {{log6}}$), the max weight is $ {{m1}}$, and the effective support is $ {{s1}}$ keys out of 6.

Entropy is the usual diagnostic. Rows with entropy near $\log L_k$ attend to everything at once (check the scale of the scores); rows with entropy near 0 attend to a single key (a larger $\tau$ softens them).`,
    },
    {
      id: 'c4-play',
      title: 'Try it',
      body: r`Figure 4.1 runs the example through the core at the temperature of the slider. The slider moves in equal ratios, from $\tau = 0.01$ to $\tau = 100$. The readouts follow the selected row, and the chart below them sweeps the whole range of $\tau$, so you can see where the current setting sits.

Things to try:

- Drag $\tau$ to the right. Every row approaches the uniform $1/6 \approx 0.167$, and the entropy curves climb to the dashed line at $\log 6$.
- Drag it to the left. Each row collapses onto its largest logit.
- Compare rows 1 and 2 at $\tau = 1$. Row 2's logits are close together, so its weights stay flat until $\tau$ is well below 1.`,
    },
    {
      id: 'c4-limit',
      title: r`The limits: $\tau \to 0$ is the hard argmax`,
      body: r`Write $z_{(1)}$ for the largest logit of a row and $\Delta$ for its gap to the runner-up. Every other key has a weight of at most $e^{-\Delta/\tau}$ relative to the winner, and that factor goes to 0 as $\tau \to 0$. In the limit, softmax becomes the one-hot vector of the argmax, which is the **hard** attention of chapter 6:

$$\lim_{\tau \to 0^+} \operatorname{softmax}(z/\tau) = \operatorname{onehot}\big(\arg\max_j z_j\big) \quad \text{(when the maximum is unique).}$$

At $\tau = 0.01$ the core's softmax of row 1 differs from its hard one-hot row by at most $ {{hardGap}}$. The readout of Figure 4.1 shows this distance for every setting. Row 2, whose top two logits differ by only $0.1$, needs a much smaller $\tau$ than row 1 to get as close.

If two keys share the maximum, softmax at small $\tau$ splits the weight evenly between them, while a hard argmax has to pick one (qkscope picks the lowest index; see chapter 6).

The other limit, $\tau \to \infty$, is the uniform row $1/L_k$: every gap shrinks to 0.`,
    },
    {
      id: 'c4-relative',
      title: 'Relative match strengths, not confidences',
      body: r`Softmax looks only at the differences between logits: adding the same constant $c$ to a whole row changes nothing, because $e^{(z_j + c)/\tau} = e^{c/\tau}\, e^{z_j/\tau}$ and the factor cancels. The rows $[4, 3, 2]$ and $[-4, -5, -6]$ give the same weights, $ {{wa}}$ and $ {{wb}}$, although in the second every key matches the query badly.

So a weight says how much better a key matches than the other keys of the same row, measured in units of $\tau$. It does not say how well the query matches anything in absolute terms, and it is not the probability that the key is the "right" one: the weights always sum to 1, even when no key is relevant. A high max weight means only that one key wins clearly, and the same logits give a higher max weight at a smaller $\tau$.`,
    },
    {
      id: 'c4-check',
      title: "Check your understanding",
      body: "Two questions to check your reading. Choose an answer to see at once whether it is right, and why.",
    },
  ],
  fig: {
    title: 'Figure 4.1. Temperature, entropy and effective support',
    caption: r`As $\tau$ falls the selected row's entropy drops toward 0, its max weight climbs toward 1 and the softmax row meets the hard one-hot row; as $\tau$ grows every row approaches the uniform $1/6$ and the entropy approaches $\log 6$. The order of the keys never changes.`,
    tau: 'Temperature τ',
    tauHint: 'Log scale: each step multiplies τ by the same factor.',
    row: 'Row (query)',
    rowOption: 'Row {i}',
    weights: 'Weights softmax(z / τ)',
    rowBars: 'Row {i}: weights at τ = {tau} and at τ = 1',
    atTau: 'τ = {tau}',
    atOne: 'τ = 1 (reference)',
    keyAxis: 'key',
    weightAxis: 'weight',
    entropyChart: 'Entropy H of each row against τ',
    entropy: 'entropy H (nats)',
    rowSeries: 'row {i}',
    uniform: 'log 6 (uniform)',
    readH: 'Entropy H',
    readMax: 'Max weight',
    readSupport: 'Effective support e^H',
    readLog: 'of log Lₖ = {max}',
    readKeys: 'of {n} keys',
    readHard: 'Distance to hard argmax',
    readHardNote: 'max |p − onehot(key {j})|',
    logits: 'Logits z of the selected row: {z}',
  },
  quiz: {
    correct: "Right.",
    wrong: "Not quite.",
    questions: [
      {
        q: "The logits of a row are [3, 3, 1]. What do the softmax weights tend to as τ → 0?",
        options: ["[1, 0, 0]", "[0.5, 0.5, 0]", "[1/3, 1/3, 1/3]"],
        answer: 1,
        why: "The two tied maxima keep equal weights for every τ, so the limit splits the weight between them; it is not a one-hot.",
      },
      {
        q: "Compared with τ = 1, what does τ = 2 do to a row of weights?",
        options: ["Flattens it: the entropy rises", "Sharpens it: the largest weight rises", "Nothing: softmax ignores τ"],
        answer: 0,
        why: "w = softmax(z / τ): dividing by τ > 1 shrinks the differences between the logits.",
      },
    ],
  },
} satisfies ChapterText & Record<string, unknown>;

export type Ch4Text = typeof en;
