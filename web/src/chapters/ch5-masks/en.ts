/**
 * English text of chapter 5 ("Masks and biases") and its five figures. Facts: shared
 * docs/facts.md §2 (additive bias: ALiBi, relative position, graph adjacency), §5, §10 (masks,
 * causal alignment, fully masked rows, fill values, fp16/bf16). {{slots}} are live numbers.
 */
import type { ChapterText } from '../types';

const r = String.raw;

export const en = {
  id: 'ch5',
  kicker: 'Chapter 5',
  title: 'Masks and biases',
  lede: 'Before the softmax, the scores can be edited: a bias adds a number to some of them, a mask removes others entirely. This chapter builds the common masks and biases live, and shows what goes wrong numerically when a mask is written carelessly.',
  sections: [
    {
      id: 'c5-order',
      title: 'Where masks and biases enter',
      body: r`qkscope applies the edits in a fixed order. For query $i$ and key $j$:

$$z_{ij} = \underbrace{c \tanh\!\big(\sigma f(q_i, k_j) / c\big)}_{\text{scaled, soft-capped score}} + \underbrace{B_{ij}}_{\text{bias}}, \qquad z_{ij} \leftarrow -\infty \ \text{where } M_{ij} = \text{false},$$

then the normalizer turns each row of $z$ into weights. A **bias** $B$ shifts scores by finite amounts: the key is still visible, only more or less attractive. A **mask** $M$ (true = may attend, the polarity of PyTorch's SDPA) removes the key: its logit becomes $-\infty$ and its weight exactly 0. Several masks combine by AND: a key is visible only if every mask allows it.

The mask acts on scores, never on the inputs. Zeroing a key vector does not hide it: a zero key still scores 0 and still takes weight (chapter 1).`,
    },
    {
      id: 'c5-structure',
      title: 'Padding, causal masks and sliding windows',
      body: r`Three masks cover most of practice.

- **Key padding.** Sequences in a batch have different lengths and are padded to the longest. With $n$ valid keys, keys $j > n$ are masked for every query.
- **Causal.** In a decoder, query $i$ may not see later tokens: keep $j \le i$.
- **Sliding window.** Each query sees only keys near it: keep $-w_\ell \le j - i \le w_r$ (Longformer, Mistral). A causal window has $w_r = 0$.

When there are fewer queries than keys ($L_q < L_k$), "$j \le i$" is ambiguous: which key is level with query $i$? Two conventions exist:

$$\text{top-left: } j \le i, \qquad \text{bottom-right: } j \le i + (L_k - L_q).$$

Top-left aligns the first query with the first key. Bottom-right aligns the *last* query with the *last* key, which is what decoding with a KV cache needs: the $L_q$ new tokens come after the $L_k - L_q$ cached ones, so the last query must see every key. FlashAttention switched from top-left to bottom-right in version 2.1, so code written for one silently changes meaning under the other. The window follows the same diagonal.

Figure 5.1 draws both alignments side by side. With $L_q = L_k$ they agree; set $L_q = 2$, $L_k = 4$ and the last query sees 2 keys under top-left and all 4 under bottom-right.

With *more* queries than keys ($L_q > L_k$) the offset $L_k - L_q$ is negative, and bottom-right alignment leaves the first $L_q - L_k$ queries with no key at all, even without any padding: their rows are fully masked (last section). Computed by the core for a causal mask with $L_q = {{brLq}}$ and $L_k = {{brLk}}$, the rows with no visible key are {{brEmpty}} under bottom-right alignment and {{tlEmpty}} under top-left. Under top-left, query $i$ always sees key 1, so a row empties only when every key is padded or a window excludes key 1. Set $L_q = {{brLq}}$, $L_k = {{brLk}}$ in Figure 5.1 to see it.`,
    },
    {
      id: 'c5-alibi',
      title: 'ALiBi: a distance penalty per head',
      body: r`ALiBi (Press, Smith and Lewis 2022) replaces position embeddings by a bias that grows with distance:

$$B_{ij} = -m_h\,\lvert j - i \rvert,$$

with a fixed slope $m_h$ for head $h$. Nothing is learned. Heads with a large slope look only at nearby tokens; heads with a small slope can see far. For $H$ heads, a power of two, the slopes form a geometric sequence:

$$m_h = 2^{-8h/H}, \qquad h = 1, \dots, H.$$

For $H = 8$ this gives $\tfrac12, \tfrac14, \dots, \tfrac1{256}$. When $H$ is not a power of two, the authors' construction takes the $2^{\lfloor \log_2 H \rfloor}$ slopes of the nearest smaller power of two and fills the remaining heads with every other slope of the construction for twice that number: the odd powers of $2^{-4/p}$ for $p = 2^{\lfloor \log_2 H \rfloor}$, which sit halfway, on a log scale, between consecutive slopes of the first list (the first of them above its largest). For $H = 12$ the list is

$$ {{slopes12}}$$



In Figure 5.2 the queries are zero vectors, so every raw score is 0 and the weights come from the bias alone: the recency profile of the chosen head.`,
    },
    {
      id: 'c5-t5',
      title: 'T5: relative positions in buckets',
      body: r`T5 (Raffel et al. 2020) learns one scalar per head for each *bucket* of relative positions $r = j - i$ and adds it to the score, $s_{ij} \leftarrow s_{ij} + b_h[\operatorname{bucket}(r)]$. Nearby offsets get a bucket each; farther ones share buckets whose width grows geometrically, and every offset beyond a maximum distance shares the last bucket. With $n$ buckets per direction, the first $n/2$ distances are exact and the rest are spaced logarithmically:

$$\operatorname{bucket}(\lvert r\rvert) = \tfrac n2 + \Big\lfloor \frac{\log(\lvert r\rvert / \tfrac n2)}{\log(\text{max distance} / \tfrac n2)}\,\big(n - \tfrac n2\big) \Big\rfloor \quad\text{for } \lvert r\rvert \ge \tfrac n2,$$

capped at $n - 1$. An encoder (bidirectional) splits its buckets between keys before and after the query; a decoder (causal) uses them all for the past. T5 itself uses 32 buckets and a maximum distance of 128.

In qkscope the offset is measured from the same diagonal as ALiBi, the causal mask and the window, $r = j - (i + o)$ with $o = 0$ (top-left) or $o = L_k - L_q$ (bottom-right), so a query decoded with a KV cache sits at its true position. Figure 5.3 shows the bucket of every pair for $L_q = 4$ queries and $L_k = 8$ keys; the table $b_h$ is learnable, and qkscope returns its gradient.`,
    },
    {
      id: 'c5-graph',
      title: 'Graph adjacency as a mask',
      body: r`Graph attention (GAT, Veličković et al. 2018) lets each node attend only to its neighbours. That is a mask: $M_{ij}$ is true when there is an edge between $i$ and $j$, usually with self-loops $M_{ii}$ so that a node also keeps its own features. Equivalently, a bias that is 0 on edges and $-\infty$ elsewhere.

In Figure 5.4, tick edges to build the graph. Each node's row of weights spreads only over its neighbours. Node 5 starts isolated: with self-loops it attends to itself with weight 1; turn self-loops off and its row has no visible key at all.`,
    },
    {
      id: 'c5-softcap',
      title: 'Soft-capping the logits',
      body: r`Very large logits make softmax one-hot and its gradient vanish (chapter 3). Gemma 2 bounds them smoothly instead of clipping:

$$s \leftarrow c \tanh(s / c).$$

For $\lvert s \rvert \ll c$ this is almost the identity; large scores are squeezed toward $\pm c$, so no capped score can exceed $c$ in size and the gaps between large logits shrink. Gemma 2 uses $c = 50$ for attention logits. qkscope applies the cap right after the scale, before bias and mask. Figure 5.5 draws the cap curve, computed by the core, and its effect on a row of large logits.`,
    },
    {
      id: 'c5-empty',
      title: 'Fully masked rows and fill values',
      body: r`Masks can leave a query with no visible key: a padding query in a batch, an isolated node, a window that misses every key. For such a row the softmax is $0/0$:

$$p_j = \frac{e^{-\infty}}{\sum_l e^{-\infty}} = \frac{0}{0} = \text{NaN}.$$

NaN then spreads through the weighted sum into the output and, in training, into every gradient. qkscope's policy is explicit: a fully masked row gets weights 0, output 0 and $\log\sum\exp = -\infty$, never NaN.

Many implementations avoid $-\infty$ by filling masked scores with a large negative constant, $-10^4$ or $-10^9$. That trades the NaN for other pitfalls, which depend on the dtype:

- $-10^9$ does not fit in float16 (largest magnitude 65504): it is stored as $-\infty$, and the NaN is back. PyTorch's masked_fill refuses the value for float16 with an overflow error.
- In bfloat16 the same constant is rounded to $ {{bf16}}$: finite, so no NaN.
- A finite fill written with masked_fill (which *replaces* the masked scores), $-10^4$ or the dtype's most negative value (torch.finfo(dtype).min), never gives NaN, but a fully masked row then becomes *uniform* over the masked keys: the query silently attends to padding.
- The same finfo.min used as an *additive* mask, scores $+$ finfo(float16).min computed in float16, is not safe: a score of $-16$ or below pushes the sum to $-65520$ or beyond, which rounds to $-\infty$ (the tie at $-65520$ rounds to even, $-65536$, out of range), and a fully masked row is NaN again. Live from the core, in float16: the masked row $ {{addScores}}$ plus $-65504$ is stored as $ {{addLogits}}$ and its softmax is $ {{addWeights}}$. With the milder scores $ {{mildScores}}$ the sums round back to $-65504$ and the row is uniform: $ {{mildWeights}}$.
- A finite fill that is too small in size, such as $-10^4$, can be larger than real scores that are themselves very negative, and then the masked keys outweigh the real ones.

The safe recipe is the one qkscope uses: keep scores and softmax in float32 even for float16 or bfloat16 inputs (mixed precision), subtract the row maximum before exponentiating, mask with $-\infty$, and handle empty rows explicitly. Figure 5.6 runs the careless recipe in each dtype and with each fill value, next to the safe one.`,
    },
    {
      id: 'c5-check',
      title: "Check your understanding",
      body: "Two questions to check your reading. Choose an answer to see at once whether it is right, and why.",
    },
  ],
  figMask: {
    title: 'Figure 5.1. Padding, causal and sliding-window masks, top-left vs bottom-right',
    caption: r`With $L_q < L_k$ the bottom-right diagonal is shifted right by $L_k - L_q$, so the last query sees every valid key, while top-left lets it see only the first $L_q$. Hatched cells are masked: weight exactly 0.`,
    lq: 'Queries L_q',
    lk: 'Keys L_k',
    pad: 'Padded keys (at the end)',
    causal: 'Causal',
    window: 'Sliding window',
    left: 'Window left w_ℓ',
    right: 'Window right w_r',
    topLeft: 'Top-left alignment',
    bottomRight: 'Bottom-right alignment',
    visible: 'Visible keys per query: {counts}',
    empty: 'Rows with no visible key: {rows} (weights 0, never NaN)',
    none: 'none',
  },
  figAlibi: {
    title: 'Figure 5.2. ALiBi slopes and the bias of one head',
    caption: r`For $H$ a power of two each slope is the previous one times $2^{-8/H}$ (halving for $H = 8$); a steeper slope concentrates the weights on the nearest keys; a gentle slope leaves them almost uniform over the visible past.`,
    heads: 'Number of heads H',
    head: 'Head h',
    slopeList: 'Slopes m₁ … m_H (select a head)',
    slopes: 'Slopes m₁ … m_H (head {h} selected)',
    slope: 'Slope of head {h}: m = {m}',
    headN: 'head {h}',
    bias: 'Bias −m |j − i| (from the core)',
    weights: 'Weights (causal, zero queries)',
    construction: 'Construction: {how}',
    power: 'H is a power of two: mₕ = 2^(−8h/H)',
    interleaved: 'H is not a power of two: {p} slopes of 2^(−8h/{p}), then every other slope of the {q}-head construction',
  },
  figT5: {
    title: 'Figure 5.3. T5 buckets of relative positions',
    caption: r`Near the diagonal each offset has its own bucket; farther away one bucket covers a growing range, and everything beyond the maximum distance shares the last one. Switch to bottom-right: the buckets follow the diagonal, so the last query's own position is bucket 0 at the last key. In causal mode keys after the query share bucket 0 (a causal mask hides them anyway).`,
    chart: 'Bucket of each (query, key) pair (from the core)',
    legend: 'bucket',
    buckets: 'Buckets',
    distance: 'Max distance',
    direction: 'Direction',
    bi: 'bidirectional (encoder)',
    causal: 'causal (decoder)',
    alignment: 'Alignment',
    topLeft: 'top-left',
    bottomRight: 'bottom-right',
    summary: 'Distances into the past per bucket: {ranges}.',
  },
  figGraph: {
    title: 'Figure 5.4. A graph as an attention mask',
    caption: r`Each row spreads its weight only over the node's neighbours (hatched cells are non-edges), and an isolated node without a self-loop has an empty row: weights 0, not NaN.`,
    edges: 'Edges',
    edge: 'Edge {a}–{b}',
    self: 'Self-loops',
    graph: 'The graph',
    weights: 'Weights with the adjacency mask',
  },
  figCap: {
    title: 'Figure 5.5. Logit soft-capping c·tanh(s/c)',
    caption: r`The capped curve follows the identity near 0 and flattens toward $\pm c$; the weights of a row of large logits become less one-sided after capping, because the gaps between large logits shrink.`,
    cap: 'Cap c',
    curve: 'Capped score against raw score',
    raw: 'raw score s',
    capped: 'capped score',
    identity: 'identity (no cap)',
    capSeries: 'c·tanh(s/c)',
    weights: 'Weights of the logits {z}',
    without: 'no cap',
    with: 'cap c = {c}',
    key: 'key',
    weight: 'weight',
  },
  figPrec: {
    title: 'Figure 5.6. A fully masked row, fill values and dtypes',
    caption: r`With a fill of $-\infty$ (or $-10^9$ in float16, which becomes $-\infty$) the fully masked row 2 turns into NaN; with a finite fill it becomes a silent uniform row; qkscope's policy (last panel) gives zeros in every dtype.`,
    dtype: 'Storage dtype',
    fill: 'Fill value',
    fill1e4: '−1e4',
    fill1e9: '−1e9',
    fillInf: '−∞',
    fillMin: 'finfo.min',
    naive: 'masked_fill in {dtype}, softmax in {dtype}',
    correct: 'qkscope: fp32 softmax, −∞ mask, empty row = 0',
    scores: 'Scores (hatched: masked)',
    stored: 'Fill value as stored',
    nan: 'NaN cells',
    raises: 'PyTorch masked_fill',
    raisesYes: 'raises (overflow)',
    raisesNo: 'accepts',
    row2: 'Row 2 (fully masked)',
    row2Nan: 'NaN',
    row2Uniform: 'uniform over masked keys',
    row2Zero: 'zeros',
    summary: 'What happened: ',
    summaryLine: 'masked_fill + softmax in {dtype}: the fill {fill} is stored as {stored}{raises}; {inf} inf in the filled scores; {nan}.',
    summaryRaises: ' (PyTorch would raise an overflow error)',
    summaryNan: 'NaN in row {rows} ({n} cells)',
    summaryNoNan: 'no NaN',
    nanCell: 'NaN',
  },
  quiz: {
    correct: "Right.",
    wrong: "Not quite.",
    questions: [
      {
        q: "$L_q$ = 6 queries, $L_k$ = 4 keys, a causal mask aligned bottom-right, no padding. How many queries see no key at all?",
        options: ["None", "2", "4"],
        answer: 1,
        why: "Bottom-right keeps j ≤ i + ($L_k$ − $L_q$) = i − 2, so the first two queries have no visible key and need the empty-row rule.",
      },
      {
        q: "In fp16, a mask is added to the scores as finfo(fp16).min. What can happen to a fully masked row?",
        options: ["It gets uniform weights, always", "Its sums round to −∞ and the row becomes NaN", "Nothing: a finite fill is always safe"],
        answer: 1,
        why: "−65504 plus a score of −16 or less rounds to −∞ in fp16. A finite fill is safe only when it replaces the score (masked_fill), not when it is added.",
      },
    ],
  },
} satisfies ChapterText & Record<string, unknown>;

export type Ch5Text = typeof en;
