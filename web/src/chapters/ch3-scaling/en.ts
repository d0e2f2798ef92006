/**
 * English text of chapter 3 ("Why divide by √d_k") and its two figures.
 * Facts: docs/facts.md §3 (variance d_k, table for 64/256/512, std 22.6 at 512,
 * saturation and the softmax Jacobian); Vaswani et al. 2017, §3.2.1 and footnote 4.
 */
import type { ChapterText } from '../types';

const r = String.raw;

export const en = {
  id: 'ch3',
  kicker: 'Chapter 3',
  title: r`Why divide by $\sqrt{d_k}$`,
  lede: 'The Transformer divides every dot-product score by the square root of the key width. This chapter measures why, live: how the spread of raw scores grows with the dimension, and what that growth does to softmax and its gradients.',
  sections: [
    {
      id: 'c3-variance',
      title: r`The spread of $q \cdot k$ grows with $d_k$`,
      body: r`Suppose the entries of a query $q$ and a key $k$ are independent, with mean 0 and variance 1, roughly what a network sees at initialisation. Each product $q_i k_i$ then has mean 0 and variance $\mathbb{E}[q_i^2]\,\mathbb{E}[k_i^2] = 1$, and the dot product adds up $d_k$ of these independent terms:

$$\operatorname{Var}(q \cdot k) = \sum_{i=1}^{d_k} \operatorname{Var}(q_i k_i) = d_k, \qquad \operatorname{std}(q \cdot k) = \sqrt{d_k}.$$

At $d_k = 512$ the raw scores have a standard deviation of about $ {{std512}}$. Dividing by $\sqrt{d_k}$ brings the variance back to 1 at every width:

$$\operatorname{Var}\!\left(\frac{q \cdot k}{\sqrt{d_k}}\right) = \frac{d_k}{d_k} = 1.$$

Figure 3.1 checks this rather than asserting it. It draws random $q$ and $k$ with standard normal entries, scores them with the same WebAssembly core as the rest of the page, and estimates the variance for $d_k = 16, 64, 256$ and $512$. It runs while you watch; the estimates settle within a few percent of $d_k$ and of 1.`,
    },
    {
      id: 'c3-not-d',
      title: r`Why $\sqrt{d_k}$ and not $d_k$`,
      body: r`Dividing by $d_k$ instead looks just as natural, and it overshoots. The variance becomes $d_k / d_k^2 = 1/d_k$: at $d_k = 512$ the scores have a standard deviation of about $0.044$, every logit in a row is nearly the same, and softmax returns nearly uniform weights whatever the keys say. The last column of the table in Figure 3.1 shows this $1/d_k$ shrinkage.

The square root is the one choice that keeps the variance at 1 at every width. Nothing makes 1 magic; what matters is that the spread of the logits does not depend on $d_k$, so that the sharpness of attention does not change when the model gets wider. A *temperature* (chapter 4) is the separate, explicit knob for sharpness.`,
    },
    {
      id: 'c3-saturation',
      title: 'Large logits saturate softmax, and gradients vanish',
      body: r`Why does the spread matter? Softmax turns differences of logits into ratios of weights: two keys whose logits differ by $\Delta$ get weights in the ratio $e^{\Delta}$. With two keys and $\Delta = 1$ the larger weight is $p = {{pSmall}}$. With $\Delta = {{gapBig}}$, one standard deviation of unscaled scores at $d_k = 512$, it is $p = {{pBig}}$: the softmax has become a hard argmax.

That also switches off learning. The derivative of the weights with respect to the logits is the softmax Jacobian

$$\frac{\partial p_j}{\partial z_l} = p_j(\delta_{jl} - p_l), \qquad J = \operatorname{diag}(p) - p\,p^\top.$$

When $p$ is one-hot, every entry of $J$ is 0, so whatever gradient reaches the weights is multiplied by (nearly) zero on its way back to the scores, and from there to $W_Q$ and $W_K$. With two keys the only non-trivial entry is $p(1-p)$: $ {{jSmall}}$ at $\Delta = 1$, and $ {{jBig}}$ at $\Delta = {{gapBig}}$.

Figure 3.2 measures both effects against $d_k$ on random queries and keys: the mean largest weight per row and the mean Frobenius norm of $J$ per row, $\lVert J\rVert_F^2 = \sum_j p_j^2 - 2\sum_j p_j^3 + \big(\sum_j p_j^2\big)^2$. Unscaled, the largest weight climbs toward 1 and the Jacobian collapses as $d_k$ grows. Scaled by $1/\sqrt{d_k}$, both stay where they were at small $d_k$. Divided by $d_k$, both drift toward the uniform limit: weights $1/L_k$, Jacobian norm $\sqrt{1/L_k - 1/L_k^2}$.`,
    },
    {
      id: 'c3-summary',
      title: 'What the scale does, and what it does not',
      body: r`- It keeps the logits on the same scale at every width, under the assumption of independent, unit-variance entries, which holds roughly at initialisation. During training $q$ and $k$ are learned and their statistics change; the scale fixes the starting point, not the whole trajectory.
- It does not change which key wins: dividing a row by a positive number preserves the order of its scores. It changes how decisively the winner wins, and how much gradient flows back.
- It applies to dot products, and to bilinear scores too: with $W$ near the identity, $q^\top W k$ is close to $q \cdot k$ and has variance about $d$ for unit-variance entries, so unscaled bilinear logits grow with the width in the same way. qkscope's default scale for bilinear is $ {{bilScale}}$ (no division, as in Luong et al.); pass $1/\sqrt{d_k}$ as the scale, or keep $W$ small, when $d$ is large. Cosine similarity is already bounded in $[-1, 1]$; additive scores pass through $\tanh$, whose outputs are bounded and weighted by $v$.
- In the core, the scale is a separate parameter of the pipeline (default $1/\sqrt{d_k}$ for the scaled dot product), applied before masks and before the temperature.`,
    },
    {
      id: 'c3-check',
      title: "Check your understanding",
      body: "Two questions to check your reading. Choose an answer to see at once whether it is right, and why.",
    },
  ],
  fig1: {
    title: 'Figure 3.1. The variance of q·k against dₖ, by Monte Carlo in your browser',
    caption: r`The unscaled variance follows $d_k$ (its dashed line, slope 1 on these log–log axes). Divided by $\sqrt{d_k}$ it stays at 1; divided by $d_k$ it falls as $1/d_k$. The estimates come from random standard normal $q$ and $k$ scored by the core, $32 \times 32$ pairs per call; with more pairs they wobble less. A new seed draws new vectors.`,
    samples: 'Pairs per dₖ',
    resample: 'New seed',
    colD: 'dₖ',
    colRaw: 'Var(q·k)',
    colStd: 'std(q·k)',
    colScaled: 'Var(q·k / √dₖ)',
    colByD: 'Var(q·k / dₖ)',
    tableCaption: 'Monte Carlo estimates of the variance of raw, scaled and d-divided scores for each key width',
    chartLabel: 'Variance of scores against key width, log–log',
    axisD: 'key width dₖ',
    axisVar: 'variance',
    seriesRaw: 'q·k',
    seriesScaled: 'q·k / √dₖ',
    seriesByD: 'q·k / dₖ',
    theoryD: 'theory dₖ',
    theory1: 'theory 1',
    theoryByD: 'theory 1/dₖ',
    running: 'Running… {pairs} pairs per width so far ({batch} per call).',
    done: 'Done: {pairs} pairs per width.',
  },
  fig2: {
    title: 'Figure 3.2. Softmax saturation against dₖ',
    caption: r`Without scaling, the largest weight of a row climbs toward 1 and the Jacobian norm falls toward 0 as $d_k$ grows: softmax turns into a hard argmax and passes almost no gradient back. With $1/\sqrt{d_k}$ both curves are flat. With $1/d_k$ they head for the uniform limit (dashed), where every key gets $1/L_k$ whatever it contains. Each point averages 64 query rows.`,
    lk: 'Keys per row Lₖ',
    lkHint: 'more keys: a lower uniform limit and a slower climb to one-hot',
    maxTitle: 'Mean largest weight per row',
    jacTitle: 'Mean softmax-Jacobian norm',
    maxLabel: 'Mean largest softmax weight against key width, for three scalings',
    jacLabel: 'Mean Frobenius norm of the softmax Jacobian against key width, for three scalings',
    axisD: 'key width dₖ',
    axisMax: 'max weight',
    axisJac: 'Jacobian norm',
    seriesRaw: 'q·k (unscaled)',
    seriesScaled: 'q·k / √dₖ',
    seriesByD: 'q·k / dₖ',
    uniform: 'uniform (Lₖ = {lk})',
    summary: 'At dₖ = {d}: unscaled, the largest weight averages {rawMax} and the Jacobian norm {rawJac}; scaled by 1/√dₖ, {sqrtMax} and {sqrtJac}; divided by dₖ, the largest weight is {dMax}, close to uniform ({uniform}).',
  },
  quiz: {
    correct: "Right.",
    wrong: "Not quite.",
    questions: [
      {
        q: "q and k have $d_k$ = 256 independent components with mean 0 and variance 1. What is the variance of q · k?",
        options: ["1", "16", "256"],
        answer: 2,
        why: "Each product $q_i$ $k_i$ has variance 1, and there are $d_k$ of them, so the variance is 256 and the standard deviation 16. Dividing by $\\sqrt{d_k}$ = 16 brings it back to 1.",
      },
      {
        q: "Why divide by $\\sqrt{d_k}$ and not by $d_k$?",
        options: ["Dividing by $d_k$ leaves a variance of 1/$d_k$ and flattens softmax toward uniform", "Dividing by $d_k$ overflows", "There is no difference"],
        answer: 0,
        why: "$\\sqrt{d_k}$ is exactly what restores variance 1; $d_k$ overshoots, and the weights of wide heads would all look alike.",
      },
    ],
  },
} satisfies ChapterText & Record<string, unknown>;

export type Ch3Text = typeof en;
