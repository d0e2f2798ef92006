/**
 * English text of chapter 10 ("From formula to code"): the scoring functions, masks and
 * normalizers as PyTorch (code/*.py, run against the core by tests/wasm/pytorch-snippets.test.mjs),
 * the shape checklist, mask polarity across libraries, why softmax subtracts the row maximum,
 * q·k overflowing fp16, fp32 scoring under mixed precision, GAT vs GATv2, training advice,
 * and checks for understanding. Facts: docs/facts.md §2, §5, §10.
 */
import type { ChapterText } from '../types';

const r = String.raw;

export const en = {
  id: 'ch10',
  kicker: 'Chapter 10',
  title: 'From formula to code',
  lede: 'The formulas of the earlier chapters, as short PyTorch code you can paste: every scoring function, the masks and the normalizers, with the shape and polarity mistakes that make attention code silently wrong, and the two overflows that make it loudly wrong.',
  sections: [
    {
      id: 'c10-intro',
      title: 'Code that is checked against the core',
      body: r`Each listing in this chapter is a real file of this project. A test feeds the same inputs to the listing (with PyTorch) and to the WebAssembly core that computes every figure of this tutorial, and requires the same numbers: in float64, the listing must agree with the core's float32 result as closely as the project's tolerance rule demands of any fast path. If a listing and the core ever disagree, the test fails.

The code follows the conventions of the tutorial: $Q$ is $L_q \times d_q$, $K$ is $L_k \times d_k$, $V$ is $L_k \times d_v$, and scores, masks and weights are $L_q \times L_k$, one row per query. Batch and head dimensions may be added in front; every function reduces over the last dimension only.`,
    },
    {
      id: 'c10-scores',
      title: 'The scoring functions',
      body: r`One function per scoring function of chapter 2. Each returns the raw score matrix; scaled dot product includes its $1/\sqrt{d_k}$. Two details matter more than they look:

- **Cosine** divides each vector by $\max(\lVert x \rVert, \epsilon)$ on its own, so a zero vector gives a score of 0 instead of $0/0$.
- **Additive** broadcasts $W_q q$ and $W_k k + b$ to an $L_q \times L_k \times d_h$ tensor. It is the shortest correct form and the common one, but it stores $L_q L_k d_h$ numbers; chapter 7 measures what that costs.`,
    },
    {
      id: 'c10-shapes',
      title: 'A shape checklist for broadcasting bugs',
      body: r`Broadcasting turns many shape mistakes into wrong numbers instead of errors. Check these before trusting an attention layer:

1. Transpose the last two dimensions of $K$ (K.transpose(-2, -1)), not all of them: for a batched tensor, reversing every axis scrambles batch and heads.
2. The scores have shape $(B, H, L_q, L_k)$. Assert it once; a transposed $(L_k, L_q)$ matrix goes unnoticed whenever $L_q = L_k$.
3. Softmax runs over the keys, dim=-1. Normalizing over the queries gives columns that sum to 1.
4. A key-padding mask of shape $(B, L_k)$ must become $(B, 1, 1, L_k)$. Broadcasting aligns trailing dimensions, so an unreshaped $(B, L_k)$ mask is read as $(L_q, L_k)$: an error if you are lucky, wrong rows when $B = L_q$.
5. A causal mask is $L_q \times L_k$, not $L \times L$, and its diagonal alignment (top-left or bottom-right) is a decision, not a default to forget.
6. Test with $L_q \ne L_k$, $d_q \ne d_k$ where allowed, odd sizes and a batch of more than one: equal sizes hide exactly the mistakes above.`,
    },
    {
      id: 'c10-masks',
      title: 'Masks',
      body: r`Masks are boolean keep masks, True = the query may attend to the key, combined with &. They are applied to the logits, after scoring, by writing $-\infty$. The value $-\infty$ is exact in every floating-point type; a large finite fill such as $-10^9$ is not representable in fp16: converted to fp16 it becomes $-\infty$ anyway (and masked_fill refuses it with an overflow error), while $-10^4$ is representable but is only a large negative number, not a mask (chapter 5).

With $L_q > L_k$ and bottom-right alignment, the first $L_q - L_k$ queries see no key at all, even without padding. Those rows need the empty-row rule of the next listing.`,
    },
    {
      id: 'c10-polarity',
      title: 'Mask polarity across libraries',
      body: r`The same padding mask is written with opposite polarities by the libraries you are most likely to mix. Reading one library's mask with another's convention silently attends to padding and ignores the real tokens. The table below lists them; the listing converts one keep mask into each.`,
    },
    {
      id: 'c10-normalizers',
      title: 'Normalizers, and rows with no key',
      body: r`Softmax with temperature subtracts the row maximum, divides by $\tau$ once and exponentiates; hard attention is the one-hot of the argmax with ties going to the lowest index; sparsemax projects $z/\tau$ onto the simplex (Martins and Astudillo 2016, Algorithm 1); top-$k$ softmax keeps the $k$ largest logits. Every function gives a row with no visible key weights 0, where a plain torch.softmax returns NaN ($0/0$). The Gumbel-softmax of chapter 6 is left out here: its noise is random, so it cannot be checked number for number against the core.`,
    },
    {
      id: 'c10-maxshift',
      title: 'Why softmax subtracts the row maximum',
      body: r`Softmax does not change when the same constant is subtracted from a whole row, so subtracting the row maximum costs nothing in exact arithmetic. In floating point it is what keeps softmax alive: $e^x$ overflows to $\infty$ for $x$ above about $88.72$ in fp32 and about $11.09$ in fp16 (the logarithms of the largest finite numbers, $3.4 \times 10^{38}$ and $65504$). Then the largest entry becomes $\infty / \infty = \text{NaN}$. After the shift every exponent is at most 0, so every exponential is at most $e^0 = 1$ and nothing can overflow.

The figure computes the row $[c,\ c-1,\ c-2]$ both ways in the core. Drag $c$ past the threshold of the chosen type: the naive weights turn to NaN and zeros, while the stable weights do not move at all, because they depend only on the differences within the row.`,
    },
    {
      id: 'c10-overflow',
      title: 'When q·k itself overflows fp16',
      body: r`Subtracting the maximum protects the exponential, not the score. A dot product of width $d$ sums $d$ products, so with $q = k = (a, \dots, a)$ it equals $d\,a^2$. The largest finite fp16 number is $65504$; a score of $65520$ or more rounds to $\infty$, and then no softmax can recover: $\infty - \infty$ is NaN. At $a = 4$ that already happens at $d = 4096$. Dividing by $\sqrt{d}$ first keeps the score $\sqrt{d}\, a^2$ far smaller, which is one more reason for the scale, and the reason to compute scores in fp32 when inputs are fp16.`,
    },
    {
      id: 'c10-mixed',
      title: 'Scoring in fp32 under mixed precision',
      body: r`Mixed precision stores $Q$, $K$ and $V$ in fp16 or bf16 to save memory and bandwidth. The scores and the softmax should still be computed in fp32: upcast before the product $QK^\top$, mask with $-\infty$, subtract the row maximum, handle empty rows, and cast the output back. Under torch.autocast on a GPU the matrix product itself runs in fp16, while softmax is one of the operations autocast runs in fp32, so an overflow of $QK^\top$ has already happened before softmax sees it. Fused kernels (FlashAttention and its successors) accumulate scores and softmax statistics in fp32 for the same reason.`,
    },
    {
      id: 'c10-gat',
      title: 'Linear concat in graphs: GAT and GATv2',
      body: r`Chapter 2 showed that the linear concat score $w^\top [q; k] = w_q \cdot q + w_k \cdot k$ ignores the query: the term $w_q \cdot q$ is the same for every key of a row and cancels in the softmax. The original graph attention network (GAT, Veličković et al. 2018, eq. 3) scores an edge from node $i$ to neighbour $j$ as

$$e_{ij} = \operatorname{LeakyReLU}\big(a^\top [W h_i \,\|\, W h_j]\big).$$

LeakyReLU is monotonic and $a^\top[W h_i \| W h_j]$ splits into a part of $i$ plus a part of $j$, so with $a = [a_1; a_2]$ the ranking of the neighbours by $e_{ij}$ is the ranking by $a_2^\top W h_j$ alone: the same for every node $i$. Brody, Alon and Yahav (2022, *How Attentive are Graph Attention Networks?*) call this **static attention**: the top-ranked node is the first choice of every node that has it as a neighbour. Their GATv2 moves the nonlinearity inside,

$$e_{ij} = a^\top \operatorname{LeakyReLU}\big(W [h_i \,\|\, h_j]\big),$$

which is an additive score with LeakyReLU in place of tanh, and can rank the neighbours differently for each node (dynamic attention). It is the same lesson as linear concat against additive attention, in graphs; Figure 10.3 shows both on a small graph.`,
    },
    {
      id: 'c10-training',
      title: 'Training advice, with the reasons',
      body: r`- **Additive: start $W_q$ and $W_k$ small.** The score is $v^\top \tanh(W_q q + W_k k + b)$. If the pre-activations are large, tanh saturates, its derivative $1 - \tanh^2$ is near 0 and the projections stop learning; small initial weights start tanh in its near-linear range.
- **Additive: do not make $d_h$ tiny.** The cost grows with $L_q L_k d_h$, but $d_h$ is also the number of directions the score can use. With $d_h = 1$ the key ranking follows $\operatorname{sign}(v)\, w_k^\top k$ for every query, and tanh saturation only changes the spacing, differently for each query (chapter 2).
- **Bilinear: regularise $W$.** $W$ has $d_q d_k$ parameters, far more than the scores need, and nothing bounds $q^\top W k$. Weight decay, or a low-rank $W = U^\top V$, keeps it from overfitting; starting near the identity starts it as the dot product, and then the $\sqrt{d}$ argument of chapter 3 applies to it too, so scale it.
- **Cosine: learn a temperature.** Cosine scores lie in $[-1, 1]$, too flat for a sharp softmax; scaled cosine attention divides by a learned $\tau$ (Liu et al. 2022).
- **Always keep a scaled-dot baseline** with everything else fixed (chapter 9).`,
    },
    {
      id: 'c10-check',
      title: 'Check your understanding',
      body: r`A few questions about this chapter. Choose an answer to see whether it is right, and why.`,
    },
  ],
  code: {
    caption: '{file}, run against the core by tests/wasm/pytorch-snippets.test.mjs',
    label: 'Python code: {file}',
  },
  polarity: {
    caption: 'The same rule in five APIs: may query i attend to key j?',
    colApi: 'API',
    colArg: 'argument',
    colMeaning: 'what “true” (or 1) means',
    colShape: 'shape',
    rows: [
      ['qkscope', 'mask, keyLength', 'True = may attend (padding is a length, no polarity)', '`(L_q, L_k)`'],
      ['PyTorch scaled_dot_product_attention', 'attn_mask: bool', 'True = may attend; a float mask is added to the scores instead', 'broadcast to `(B, H, L_q, L_k)`'],
      ['PyTorch nn.MultiheadAttention', 'key_padding_mask: bool', 'True = IGNORE this key (padding)', '`(B, L_k)`'],
      ['Hugging Face Transformers', 'attention_mask', '1 = real token, 0 = padding', '`(B, L_k)`'],
      ['PyTorch FlexAttention', 'mask_mod(b, h, q_idx, kv_idx)', 'returns True = may attend; `score_mod(score, b, h, q_idx, kv_idx)` returns a new score (bias, soft-cap)', 'called per `(b, h, i, j)`'],
    ],
  },
  maxshift: {
    title: 'Figure 10.1. Naive and stable softmax of [c, c − 1, c − 2]',
    caption: r`The stable weights are the same for every $c$: only differences within a row matter. The naive weights are right until the exponentials overflow. In fp16 their sum passes 65504 a little before $c$ reaches 11.09, and every weight becomes 0; past 11.09 (88.72 in fp32) $e^c$ itself is $\infty$, the largest entry is $\infty/\infty = \text{NaN}$ and the rest are divided by $\infty$. The numbers come from the core's softmax in the chosen type, computed both ways.`,
    c: 'Largest logit c',
    dtype: 'Type',
    naive: 'naive: exp(z) / Σ exp(z)',
    stable: 'stable: exp(z − max z) / Σ exp(z − max z)',
    key: 'key',
    weight: 'weight',
    chartTitle: 'Weights of the row',
    colKey: 'key',
    colLogit: 'logit',
    colNaive: 'naive',
    colStable: 'stable',
    ok: 'No overflow: both ways agree.',
    broken: 'The naive softmax overflowed: {inf} of the exponentials are ∞ and {nan} of the weights are NaN. The stable softmax is unaffected.',
    sumOverflow: 'Every exponential is finite, but their sum overflowed: the naive weights are all 0. The stable softmax is unaffected.',
    tableCaption: 'Logits and weights, naive and stable',
  },
  overflow: {
    title: 'Figure 10.2. q · k in fp16 as the width d grows',
    caption: r`With every component equal to $a$, $q \cdot k = d\,a^2$. The largest finite fp16 number is $65504$; from $65520$ on the score rounds to $\infty$ and the softmax row is lost; the scaled score $q \cdot k / \sqrt d$ stays far below the limit. The scores are the core's, and so is the verdict: it refuses to store a score that overflows fp16.`,
    d: 'Width d',
    a: 'Component size a',
    colWhat: 'score',
    colValue: 'value (fp32)',
    colFp16: 'in fp16',
    dot: 'q · k',
    scaled: 'q · k / √d',
    fits: 'fits',
    overflows: 'overflows → ∞',
    limit: 'largest finite fp16: 65504',
    tableCaption: 'The same score in fp32 and fp16',
    chartTitle: 'Score against the fp16 limit',
    axisScore: 'score (log)',
    axisWhich: 'score',
    limitSeries: 'fp16 limit 65504',
    valueSeries: 'score',
  },
  gat: {
    title: 'Figure 10.3. Static and dynamic attention on a small graph',
    caption: r`Each row is a node, each column a neighbour; cells without an edge are hatched. On the left, under linear concat, every node ranks its neighbours by the same key-only score, so nodes that share neighbours pick the same one first: that is static attention. On the right, additive attention (the GATv2 form, with tanh in place of LeakyReLU) lets each node rank them its own way. The core has no LeakyReLU. On the left that changes nothing: GAT applies it after the sum, and being monotonic it would not change which neighbour comes first. On the right tanh takes its place as the nonlinearity inside the sum, which is what makes the ranking depend on the node. Change the seed to draw other features and parameters.`,
    seed: 'Seed of features and parameters',
    staticTitle: 'Linear concat (GAT): static',
    dynamicTitle: 'Additive (GATv2 form): dynamic',
    node: 'node',
    neighbour: 'neighbour',
    noEdge: 'no edge',
    first: 'First choice of each node: {list}',
  },
  quiz: {
    correct: 'Right.',
    wrong: 'Not quite.',
    questions: [
      {
        q: 'nn.MultiheadAttention gets key_padding_mask = [[False, False, True]]. Which key is ignored?',
        options: ['Key 3', 'Keys 1 and 2', 'None: True means may attend'],
        answer: 0,
        why: 'key_padding_mask uses True = ignore, the opposite of SDPA’s boolean attn_mask and FlexAttention’s mask_mod.',
      },
      {
        q: 'A row holds the logits [100, 99]. What does exp(z) / Σ exp(z) give in fp32?',
        options: ['[0.731, 0.269]', '[NaN, NaN]', '[1, 0]'],
        answer: 1,
        why: 'e^100 and e^99 both exceed the largest fp32 number (the limit is about e^88.72), so every term and the sum are ∞, and ∞/∞ is NaN. Subtracting the maximum first gives the logits [0, −1], whose weights are [0.731, 0.269].',
      },
      {
        q: 'Your scores have shape (B, $L_q$, $L_k$) and your padding mask (B, $L_k$). What should you do before applying it?',
        options: ['Nothing, broadcasting handles it', 'Reshape it to (B, 1, $L_k$)', 'Transpose it to ($L_k$, B)'],
        answer: 1,
        why: 'Broadcasting aligns trailing dimensions, so (B, $L_k$) would be read as ($L_q$, $L_k$). With a singleton query axis it applies to every query of its own sequence.',
      },
    ],
  },
} satisfies ChapterText & Record<string, unknown>;

export type Ch10Text = typeof en;
