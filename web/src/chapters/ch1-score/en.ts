/**
 * English text of chapter 1 ("What a score is") and of Figure 1.
 * Facts: docs/facts.md §1, §2. {{name}} slots are live numbers from the core.
 */
import type { ChapterText } from '../types';

const r = String.raw;

export const en = {
  id: 'ch1',
  kicker: 'Chapter 1',
  title: 'What a score is',
  lede: 'Before attention can mix anything, it has to say how well each query matches each key. This chapter shows what such a score is, the order in which attention runs its steps, and one small example worked by hand, with every number computed live.',
  sections: [
    {
      id: 'score',
      title: 'One number per query–key pair',
      body: r`Attention lets each token, acting as a *query*, look at a set of tokens, the *keys*, and take a weighted mix of their *values*. Before anything is mixed, the model must say how well each query matches each key. That is the job of a **scoring function**: it takes one query vector $q$ and one key vector $k$ and returns a single real number, a *logit*:

$$f(q, k) \in \mathbb{R}.$$

Scoring every query against every key gives the score matrix $S$ with $S_{ij} = f(q_i, k_j)$, of shape $L_q \times L_k$: one row per query, one column per key. A normalizer, usually softmax, turns each row into weights that are non-negative and sum to 1, and the output for query $i$ is the weighted sum of the value rows, $o_i = \sum_j w_{ij}\, v_j$.

A single score means little on its own. Softmax does not change when the same constant is added to a whole row, so only the differences between scores in one row matter. Read scores as *relative match strengths*, not as probabilities or confidences.`,
    },
    {
      id: 'pipeline',
      title: 'The order of operations',
      body: r`Every attention layer in this tutorial runs the same five steps, always in this order:

1. **Score** every pair: $z_{ij} = f(q_i, k_j)$.
2. **Scale**, and add a bias if there is one. Scaled dot product multiplies by $1/\sqrt{d_k}$.
3. **Mask**: pairs that are not allowed, such as padding keys or future tokens, get the logit $-\infty$.
4. **Normalize** each row with temperature $\tau$: $w_{ij} = \exp(z_{ij}/\tau) \,/\, \sum_{j'} \exp(z_{ij'}/\tau)$.
5. **Weight the values**: $o_i = \sum_j w_{ij}\, v_j$.

The mask comes *after* scoring. A tempting shortcut is to mask *before* scoring by zeroing the padded key vectors. It does not work: a zero key still gets a score, $q \cdot 0 = 0$, and $\exp(0) = 1$ is not small. In the worked example below, zeroing key 3 still leaves it a weight of {{zeroKeyW}} from query 1. Setting its logit to $-\infty$ instead gives it exactly $0$, and the weights of query 1 become $ {{padW}}$.`,
    },
    {
      id: 'qkv',
      title: 'Where q, k and v come from',
      body: r`Queries, keys and values are not given; they are computed from the tokens by three learned matrices. Stack the token vectors as the rows of $X$ ($L \times d_{\text{model}}$). Then

$$Q = X W_Q, \qquad K = X_{\text{kv}} W_K, \qquad V = X_{\text{kv}} W_V,$$

with $W_Q$ of shape $d_{\text{model}} \times d_q$, $W_K$ of shape $d_{\text{model}} \times d_k$ and $W_V$ of shape $d_{\text{model}} \times d_v$. The same token can therefore play three roles: what it looks for (its query), what it offers to be found by (its key) and what it contributes once found (its value).

- **Self-attention**: $X_{\text{kv}} = X$. Queries, keys and values come from the same sequence, so $L_q = L_k$ when the whole sequence is processed at once (Vaswani et al. 2017). A decoder generating with a KV cache is the exception: its few new queries attend to all the cached keys, so $L_q < L_k$ (chapter 5).
- **Cross-attention**: the queries come from one sequence and the keys and values from another, for example a decoder attending to an encoder's outputs, as in the first attention models for translation (Bahdanau et al. 2015). Then $L_q \ne L_k$ is the normal case, and the two sides may even have different widths.
- **Multi-head attention**: $H$ heads, each with its own $W_Q^{(h)}, W_K^{(h)}, W_V^{(h)}$ of smaller width (typically $d_k = d_{\text{model}}/H$), score and mix independently; their outputs are concatenated and projected by $W_O$ (Vaswani et al. 2017, §3.2.2). Everything in this tutorial happens inside one head.

The worked example below takes the simplest choice, $W_Q = W_K = W_V = I$, so that $Q = K = V = X$ and every number can be checked by hand.`,
    },
    {
      id: 'worked',
      title: 'A worked example, step by step',
      body: r`Take three tokens with four features each and the simplest possible projections, $W_Q = W_K = W_V = I$, so that queries, keys and values are all the same matrix:

$$X = {{X}}, \qquad Q = K = V = X.$$

**Step 1: raw scores.** With the dot product, the raw scores are $QK^\top = XX^\top$:

$$XX^\top = {{XXt}}.$$

The diagonal holds each token scored against itself, and here it is the largest entry of every row. That is a property of this example, not of attention: $W_Q = W_K$ makes each score $x_i \cdot x_j$, and every token has the same norm $\sqrt 2$, so by the Cauchy–Schwarz inequality no other token can score higher against $x_i$ than $x_i$ itself. With $W_Q \ne W_K$, or tokens of different norms, a key can outscore the query's own token. Tokens 1 and 2 share no feature, so their score is 0.

**Step 2: scale.** Scaled dot product divides by $\sqrt{d_k} = \sqrt{ {{dk}} } = {{sqrtdk}}$:

$$S = \frac{XX^\top}{ {{sqrtdk}} } = {{S}}.$$

**Step 3: softmax each row.** Row 1 holds the scores $ {{s1}}$. Softmax exponentiates them and divides by their sum; the log of that sum (the row's log-sum-exp) is $ {{lse1}}$:

$$w_1 = \operatorname{softmax}\big( {{s1}} \big) = {{w1}}.$$

All three rows together:

$$W = {{W}}.$$

The largest weight of row 1 is on key {{top1}}: token 1 attends most to itself.

**Step 4: weight the values.** Row 1 of the output mixes the value rows with these weights:

$$o_1 = {{w11}}\, v_1 + {{w12}}\, v_2 + {{w13}}\, v_3 = {{o1}},$$

and the whole output is

$$O = WV = {{O}}.$$

Every number in this section was computed when the page loaded, by the same WebAssembly core that drives the figure below.`,
    },
    {
      id: 'erratum',
      title: 'A number worth double-checking',
      body: r`This example circulates widely. A popular write-up prints row 1 of the weights as $[0.387,\ 0.142,\ 0.471]$ and concludes that token 1 attends most to token 3. Both claims are wrong. The correct row, computed live above, is $ {{w1}}$: token 1 attends most to **itself**.

You can see this without a calculator. Row 1 of $XX^\top$ is $ {{raw1}}$, and the self-score is the largest. Scaling by a positive number and softmax both preserve order, so the largest weight must fall on key 1, whatever the scale. The wrong row even sums to 1, so checking the sum would not catch the mistake; comparing the order of the weights with the order of the scores does.

A habit worth keeping: when an attention heatmap seems to say something surprising, first check that, within each row, the weights are ordered like the scores.`,
    },
    {
      id: 'playground',
      title: 'Try it yourself',
      body: r`The figure below runs the same core on inputs you control. It starts from the worked example, so row 1 of the weights reads {{w1text}}. Then try this:

- Switch the scoring function. The formula shown is the one being computed; scoring functions with parameters draw them from the seed.
- Drag the temperature. $\tau > 1$ flattens each row toward uniform, so the entropy rises; $\tau < 1$ sharpens it toward the largest score, so the max weight rises.
- Turn on the causal mask, or reduce the number of valid keys, and watch masked cells become hatched: they receive no weight at all.
- Set one key vector to all zeros and check that it still receives weight.`,
    },
    {
      id: 'compare',
      title: 'Every scoring function in one table',
      body: r`Chapter 2 compares the scoring functions on live inputs. This table collects their properties in one place. Names, formulas, parameters and whether $d_q \ne d_k$ is allowed come from the core's registry, the same list the figures use; the other columns are the facts the later chapters show. Costs count the work to form $S$, with $L = L_q = L_k$ where it does not matter and $d_h$ the hidden width of additive attention.`,
    },
    {
      id: 'c1-check',
      title: "Check your understanding",
      body: "Two questions to check your reading. Choose an answer to see at once whether it is right, and why.",
    },
  ],
  compare: {
    caption: 'Scoring functions compared',
    colName: 'scoring function',
    colFormula: 'f(q, k)',
    colParams: 'parameters',
    colCost: 'cost of S',
    colDims: 'd_q\u00a0≠\u00a0d_k',
    colBounded: 'bounded',
    colQuery: 'depends on the query',
    colScale: 'needs scaling',
    colUse: 'when to use',
    none: 'none',
    yes: 'yes',
    no: 'no',
    rows: {
      dot: { cost: r`$L_q L_k d$`, bounded: 'no', query: 'yes', scale: r`yes: the variance grows with $d_k$`, use: 'rarely on its own; scaled dot is the same with the scale' },
      scaled_dot: { cost: r`$L_q L_k d$`, bounded: 'no', query: 'yes', scale: r`built in: $1/\sqrt{d_k}$`, use: 'the default for language and vision; the best hardware support' },
      cosine: { cost: r`$L_q L_k d$`, bounded: r`yes, $[-1, 1]$`, query: 'yes', scale: 'the opposite: too flat, learn a temperature', use: 'retrieval and vector search, when norms should not count' },
      bilinear: { cost: r`$L_q d_q d_k + L_q L_k d_k$`, bounded: 'no', query: 'yes', scale: r`yes: with $W$ near $I$ the variance is about $d$`, use: 'aligning features from different spaces (e.g. text and image)' },
      additive: { cost: r`$L_q d_q d_h + L_k d_k d_h + L_q L_k d_h$ (tanh)`, bounded: r`yes, $|f| \le \lVert v \rVert_1$`, query: 'yes', scale: 'no (tanh bounds it); start the weights small', use: 'small models, RNN encoder–decoders, graph attention' },
      linear_concat: { cost: r`$L_q d_q + L_k d_k + L_q L_k$`, bounded: 'no', query: r`**no**: the query term cancels in softmax`, scale: 'no', use: 'not as attention; it shows why a nonlinearity is needed' },
      neg_sq_euclidean: { cost: r`$L_q L_k d$`, bounded: r`above: $f \le 0$`, query: 'yes', scale: r`yes: default $1/\sqrt{d_k}$`, use: 'nearest-key matching; Lipschitz (L2) self-attention' },
    } as Record<string, { cost: string; bounded: string; query: string; scale: string; use: string }>,
    missing: 'not described yet',
  },
  terms: {
    lead: 'Point at a term to see its cells in the figure:',
    names: {
      S: 'every score',
      s1: 'the scores of query 1 (row 1)',
      W: 'every weight',
      w1: 'the weights of query 1 (row 1)',
      w13: 'the weight query 1 gives key 3',
      O: 'the whole output',
      o1: 'the output of query 1',
    },
  },
  figure: {
    title: 'Figure 1.1. Scores, weights and output, computed live',
    caption: r`With the worked example, the largest weight of every row sits on the diagonal, because $W_Q = W_K$ and all tokens have the same norm; with other inputs it need not. Scores use a diverging palette centred at 0 (blue below, red above), weights a sequential palette on the fixed range 0 to 1, so colours stay comparable as you change the inputs. Hatched cells are masked: their logit is $-\infty$ and their weight is exactly 0, not merely small.`,
    controls: 'Controls',
    score: 'Scoring function',
    formula: 'Formula',
    temperature: 'Temperature τ',
    temperatureHint: 'τ > 1 flattens each row, τ < 1 sharpens it',
    causal: 'Causal mask',
    causalHint: 'query i sees only keys j ≤ i (top-left alignment)',
    keyLength: 'Valid keys (padding mask)',
    keyLengthValue: '{n} of {total}',
    seed: 'Parameter seed',
    seedHint: 'Parameters {params} are initialised from this seed.',
    noParams: 'This scoring function has no learnable parameters.',
    scaleUsed: 'scale used',
    reset: 'Reset figure',
    sizes: 'Sizes',
    lq: '$L_q$ queries',
    lk: '$L_k$ keys',
    dq: '$d_q$',
    dk: '$d_k$',
    dv: '$d_v$',
    inputs: 'Inputs',
    inputsHint: 'Edit any number; one row per token.',
    matrixQ: 'Queries Q',
    matrixK: 'Keys K',
    matrixV: 'Values V',
    cellAria: '{m} row {i}, column {j}',
    invalidNumber: 'Not a number; the last valid value is kept.',
    scoresTitle: 'Scores',
    scoresNote: 'logits after scale and mask, before softmax',
    weightsTitle: 'Attention weights',
    weightsNote: 'softmax(scores / τ), each row sums to 1',
    outputTitle: 'Output',
    outputNote: 'weights × V, one row per query',
    shape: '{rows} × {cols}',
    axisQuery: 'query',
    axisKey: 'key',
    axisDim: 'dim',
    cellLabel: '{row} {i}, {col} {j}: {value}',
    maskedCell: 'masked',
    maskedLegend: 'masked',
    legendScore: 'score',
    legendWeight: 'weight',
    legendValue: 'value',
    statsTitle: 'Per-row diagnostics',
    statsHint: r`Entropy $H = -\sum_j w_{ij} \log w_{ij}$ is 0 when one key takes all the weight and $\log L_k$ when the weights are uniform.`,
    statsQuery: 'query',
    statsMax: 'max weight',
    statsArgmax: 'on key',
    statsEntropy: 'entropy H (nats)',
    statsSupport: 'effective support e^H',
    statsEmpty: 'no valid key',
    errorTitle: 'This configuration cannot be computed:',
    errorStale: 'The charts below still show the last valid result.',
    errorSameDim: 'Scoring functions that accept $d_q \\ne d_k$: {names}.',
  },
  quiz: {
    correct: "Right.",
    wrong: "Not quite.",
    questions: [
      {
        q: "In the worked example, which key does token 1 give the largest weight?",
        options: ["Key 1, itself", "Key 3", "All three equally"],
        answer: 0,
        why: "Its self-score is the largest entry of row 1, and scaling and softmax keep the order of the scores. The widely copied row [0.387, 0.142, 0.471] is wrong.",
      },
      {
        q: "How do you keep a query from attending to padding keys?",
        options: ["Set those keys' vectors to zero before scoring", "Set their logits to −∞ after scoring", "Divide the scores by the number of real keys"],
        answer: 1,
        why: "A zero key still gets the score q · 0 = 0, and e⁰ = 1 is not small. A logit of −∞ gives a weight of exactly 0.",
      },
    ],
  },
} satisfies ChapterText & { figure: Record<string, string>; compare: Record<string, unknown>; terms: Record<string, unknown>; quiz: Record<string, unknown> };

export type Ch1Text = typeof en;
