/**
 * English text of chapter 2 ("The scoring functions side by side") and its two figures.
 * Facts: docs/facts.md §2 (the table; linear concat cancels). {{slots}}
 * are live numbers from the core on the chapter's default inputs.
 */
import type { ChapterText } from '../types';

const r = String.raw;

export const en = {
  id: 'ch2',
  kicker: 'Chapter 2',
  title: 'The scoring functions side by side',
  lede: 'The common ways to turn a query and a key into one number, run on the same inputs so their differences are visible rather than described.',
  sections: [
    {
      id: 'c2-lineup',
      title: 'Ways to score a pair',
      body: r`Every function below takes one query $q$ (length $d_q$) and one key $k$ (length $d_k$) and returns one logit. They differ in what they can compare, what they learn, and what they cost to evaluate for all $L_q \times L_k$ pairs.

- **Dot product**, $q^\top k$. No parameters; needs $d_q = d_k$; costs $L_q L_k d$. Its spread grows with the dimension, which is the subject of chapter 3.
- **Scaled dot product** (Vaswani et al. 2017), $q^\top k / \sqrt{d_k}$. The same ranking as the dot product, on a scale that does not grow with $d_k$. The Transformer default.
- **Cosine similarity**, $q^\top k / (\lVert q\rVert\,\lVert k\rVert)$. Always in $[-1, 1]$; it forgets how long the vectors are. A zero vector would give $0/0$; the core divides each vector by $\max(\lVert x\rVert, \epsilon)$, so a zero vector scores 0.
- **Bilinear**, or "general" (Luong et al. 2015), $q^\top W k$ with a learned $W$ of shape $d_q \times d_k$. Queries and keys may live in spaces of different widths. With $W = I$ it *is* the dot product. Cost: $L_q d_q d_k + L_q L_k d_k$ (project the queries once, then dot).
- **Additive**, or "concat" (Bahdanau et al. 2015), $v^\top \tanh(W_q q + W_k k + b)$ with a hidden size $d_h$. The most expressive of these, and the most expensive: $L_q L_k d_h$ evaluations of $\tanh$.
- **Linear concat** without an activation, $w^\top [q; k]$. It looks like additive attention minus the $\tanh$, and it is much weaker than that suggests: see the last section.
- **Negative squared Euclidean distance**, $-\lVert q - k\rVert^2$: the "L2 attention" of Kim, Papamakarios & Mnih (2021). No parameters; needs $d_q = d_k$; like the scaled dot product it is multiplied by $1/\sqrt{d_k}$ by default. A key scores highest when it is *close* to the query, not when it points the same way and is long. Expanding the square, $-\lVert q - k\rVert^2 = 2\,q^\top k - \lVert q\rVert^2 - \lVert k\rVert^2$. The $\lVert q\rVert^2$ term is the same for every key of a row, so it cancels in the softmax: what remains is twice the scaled dot product plus a penalty $-\lVert k\rVert^2/\sqrt{d_k}$ on long keys. That penalty is why Kim et al. use it: with tied projections $W_Q = W_K$, L2 self-attention is Lipschitz (a bounded change of the input gives a bounded change of the output), while dot-product self-attention is not Lipschitz on unbounded inputs.

The core keeps these in one registry, and the figures below list whatever it holds, in its order, with its formulas.`,
    },
    {
      id: 'c2-side-by-side',
      title: 'One Q, K, V, one heatmap per function',
      body: r`Figure 2.1 runs every scoring function on the same queries and keys. Each heatmap has one row per query and one column per key; by default it shows the softmax weights, on the same colour scale everywhere, so the panels can be compared directly. Hover over or focus a cell and the same cell is outlined in every panel.

The default inputs hide a small trap. Key 3 is exactly twice key 1. For query 1 the dot product scores key 1 at $ {{dot1}}$ and key 3 at $ {{dot3}}$, so key 3 wins by a wide margin; cosine similarity scores both at $ {{cos1}}$ and $ {{cos3}}$, a tie, because it sees only directions. Row 1 of the weights reads $ {{dotW}}$ for the dot product and $ {{cosW}}$ for cosine.

Things to try:

- Switch the view to *scores* to see the raw logits; each panel then has its own colour range, since the functions live on different scales.
- Open *Inputs* and edit a number, or paste your own matrices (JSON or CSV). Make $d_q \ne d_k$ and watch which functions can still run.
- Multiply one key by 3: the dot-product panels react, the cosine panel does not move.`,
    },
    {
      id: 'c2-params',
      title: 'Parameters: bilinear near the identity, additive’s hidden size',
      body: r`Three of the seven functions have learned parameters. Here they are drawn from the seed, as at the start of training, and two sliders move the interesting ones.

**Bilinear.** The figure uses $W = I + \alpha N$, where $N$ has independent standard normal entries. At $\alpha = 0$ the bilinear weights equal the dot-product weights exactly: computed on the default inputs with $\alpha = 0$, the largest difference between the two is $ {{bilDiff}}$. The figure starts at $\alpha = {{alpha0}}$, where the two panels already differ a little. As $\alpha$ grows, $W$ mixes features before comparing them: the bilinear panel drifts away from the dot product while keeping the same kind of structure. This is why initialising $W$ near the identity makes bilinear attention start out as dot-product attention.

**Additive.** The hidden size $d_h$ is the number of $\tanh$ units that each pair passes through. With $d_h = 1$ the score is $v \tanh(w_q^\top q + w_k^\top k + b)$ with scalars $v, b$. Since $\tanh$ is increasing, every query ranks the keys in the same order: that of $w_k^\top k$ when $v > 0$, and the reverse when $v < 0$. What the query changes is the spacing: its term $w_q^\top q$ shifts every argument of $\tanh$, and where that lands on the saturated flanks the key scores are squeezed together, near the centre they stay apart, so both the sharpness and the relative gaps between keys differ from query to query. Larger $d_h$ lets different queries prefer different keys. The price is the $L_q \times L_k \times d_h$ work (and, in the naive broadcast implementation, memory) that chapter 7 measures.

**Linear concat** has a vector $w$ of length $d_q + d_k$, also from the seed.`,
    },
    {
      id: 'c2-differences',
      title: 'Where they disagree',
      body: r`Figure 2.2 subtracts the weights of one function from those of another. Red cells are where $A$ gives more weight than $B$, blue where it gives less; the summary says how large the largest difference is and in how many rows the favourite key changes.

Some pairs worth comparing:

- *Dot product* against *scaled dot product*: the same ranking in every row, but the scaled version is flatter, so the difference is positive on each row's favourite key and negative on its weakest keys.
- *Dot product* against *cosine similarity*: much of the disagreement sits on key 3, the key with the largest norm.
- *Dot product* against *bilinear*: set $\alpha$ to 0 in Figure 2.1 (its default is $ {{alpha0}}$) and the difference is identically zero; raise $\alpha$ again and it grows.
- *Linear concat* against anything: look at its own weights first.
- *Dot product* against *negative squared Euclidean distance*: in row 1 the dot product prefers key 3, twice as long as the query; the distance prefers key 1, which equals the query.

**Why linear concat ignores the query.** Write $w = [w_q; w_k]$. Then $w^\top [q; k] = w_q^\top q + w_k^\top k$: a term that depends only on the query plus a term that depends only on the key. Within one softmax row the query is fixed, so its term is the same constant for every key, and softmax does not change when a constant is added to a whole row. What is left, $w_k^\top k$, does not mention the query. Every query therefore gets *the same* weights. In the figure every row of the linear-concat weights is identical; on the default inputs the largest difference between two rows in any column is $ {{lcSpread}}$, and each row reads $ {{lcRow}}$. The $\tanh$ in additive attention is what couples $q$ and $k$; remove it, and no learned $w$ can make attention depend on the query.`,
    },
    {
      id: 'c2-check',
      title: "Check your understanding",
      body: "Two questions to check your reading. Choose an answer to see at once whether it is right, and why.",
    },
  ],
  fig1: {
    title: 'Figure 2.1. Every scoring function on one Q, K, V',
    caption: r`All panels share the same inputs and, in the weights view, the same colour scale from 0 to 1, so a brighter cell means more weight in every panel. Key 3 is twice key 1: in row 1 the dot-product panels put far more weight on it than cosine does. In the linear-concat panel every row is the same. The note under each panel gives the mean row entropy; $\log L_k$ would mean uniform weights.`,
    view: 'Show',
    viewWeights: 'weights (softmax)',
    viewScores: 'scores (logits)',
    alpha: 'Bilinear: W = I + α·N, α',
    alphaHint: 'α = 0 makes bilinear equal to the dot product',
    dh: 'Additive: hidden size dₕ',
    dhHint: 'number of tanh units per query–key pair',
    seedHint: 'draws N and the parameters of additive and linear concat',
    inputs: 'Inputs: Q, K, V',
    inputsHint: 'Edit any number (one row per token), or paste matrices of another shape below.',
    matrixQ: 'Queries Q',
    matrixK: 'Keys K',
    matrixV: 'Values V',
    cellAria: '{m} row {i}, column {j}',
    invalidNumber: 'Not a number; the last valid value is kept.',
    needsSameDim: 'Needs d_q = d_k: this function compares q and k entry by entry.',
    meanEntropy: 'mean entropy {h} nats (uniform: {max})',
  },
  fig2: {
    title: 'Figure 2.2. The difference between two scoring functions',
    caption: r`The difference uses a diverging palette centred at 0: red where $A$ gives a key more weight than $B$, blue where it gives less. Each row of a difference of two weight matrices sums to 0, so every red cell is paid for by blue ones in the same row. Choose the same function twice and the difference is exactly 0.`,
    a: 'Function A',
    b: 'Function B',
    weightsOf: 'Weights: {name}',
    diffTitle: '{a} − {b}',
    summary: 'Largest difference {max}, at query {i}, key {j}. The favourite key changes in {rows} of {total} rows.',
    summaryZero: 'The two weight matrices are the same (largest difference {max}).',
  },
  quiz: {
    correct: "Right.",
    wrong: "Not quite.",
    questions: [
      {
        q: "With the linear concat score wᵀ[q; k], how do the weights of two different queries compare?",
        options: ["They are identical", "They are mirror images", "They differ whenever the queries differ"],
        answer: 0,
        why: "wᵀ[q; k] = $w_q$ · q + $w_k$ · k. The query term is the same for every key of a row, and softmax ignores a constant added to a row.",
      },
      {
        q: "Which scoring functions accept queries and keys of different widths, $d_q$ ≠ $d_k$?",
        options: ["Dot product and cosine", "Bilinear, additive and linear concat", "Only scaled dot product"],
        answer: 1,
        why: "Their parameters map between the two widths (W is $d_q$ × $d_k$; $W_q$ and $W_k$ project both sides to $d_h$). Dot-product-based scores need $d_q$ = $d_k$.",
      },
    ],
  },
} satisfies ChapterText & Record<string, unknown>;

export type Ch2Text = typeof en;
