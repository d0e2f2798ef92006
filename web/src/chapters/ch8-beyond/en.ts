/**
 * English text of chapter 8 ("Beyond quadratic"): linear attention with phi = elu + 1
 * (Katharopoulos et al. 2020) and FAVOR+ positive random features (Choromanski et al. 2021),
 * their error against softmax and their cost; top-k and sliding window + global tokens
 * (Longformer, BigBird). Facts: docs/facts.md §8.
 */
import type { ChapterText } from '../types';

const r = String.raw;

export const en = {
  id: 'ch8',
  kicker: 'Chapter 8',
  title: 'Beyond quadratic: linear and sparse attention',
  lede: 'Softmax attention compares every query with every key. Two families of methods avoid that: kernel methods change the order of the multiplications, sparse methods skip most pairs. Both trade exactness for speed, and this chapter measures how much.',
  sections: [
    {
      id: 'c8-linear',
      title: 'Changing the order of the products',
      body: r`Softmax attention computes $\operatorname{softmax}(QK^\top/\sqrt{d})\,V$. The $L \times L$ matrix in the middle is what makes it quadratic, and the exponential is what stops us from avoiding it: $e^{q \cdot k}$ does not factor into a part for $q$ and a part for $k$.

Kernel methods replace the exponential by a similarity that does factor, $\operatorname{sim}(q, k) = \phi(q)^\top \phi(k)$ for a feature map $\phi$ with non-negative outputs. Then, by associativity,

$$o_i = \frac{\sum_j \phi(q_i)^\top \phi(k_j)\, v_j^\top}{\sum_j \phi(q_i)^\top \phi(k_j)} = \frac{\phi(q_i)^\top \big(\sum_j \phi(k_j) v_j^\top\big)}{\phi(q_i)^\top \sum_j \phi(k_j)}, \qquad O = \frac{\phi(Q)\,\big(\phi(K)^\top V\big)}{\phi(Q)\,\big(\phi(K)^\top \mathbf{1}\big)}.$$

The bracket $\phi(K)^\top V$ is an $m \times d$ matrix computed once, so the cost is $O(L\, m\, d)$ instead of $O(L^2 d)$, and no $L \times L$ matrix is ever formed. Two feature maps:

- $\phi(x) = \operatorname{elu}(x) + 1$ (Katharopoulos et al. 2020): cheap, positive, $m = d$. It defines a *different* kernel, so it does not approximate softmax; it replaces it.
- Positive random features (Performer's FAVOR+, Choromanski et al. 2021): $\phi(x) = \frac{1}{\sqrt m}\exp\big(Wx - \lVert x\rVert^2/2\big)$ with $m$ random Gaussian directions in $W$. In expectation $\phi(q)^\top\phi(k) = e^{q \cdot k}$: an unbiased estimate of the kernel $e^{q \cdot k}$ whose error shrinks as $m$ grows. To compare it with $\operatorname{softmax}(QK^\top/\sqrt d)$, $q$ and $k$ are first scaled by $d^{-1/4}$, so that the estimate targets $e^{q \cdot k/\sqrt d}$; the figures do exactly that. (The normalised weights, a ratio of two such estimates, are only approximately unbiased.)

For causal (decoder) attention, the sums run over $j \le i$ only. They are prefix sums: keep $S_i = S_{i-1} + \phi(k_i) v_i^\top$ and $z_i = z_{i-1} + \phi(k_i)$, and read $o_i = \phi(q_i)^\top S_i / \phi(q_i)^\top z_i$. That is a recurrent network with an $m \times d$ state, which is why the paper is called "Transformers are RNNs".`,
    },
    {
      id: 'c8-error',
      title: 'How close to softmax?',
      body: r`The first figure computes softmax attention with qkscope's forward() and the two kernel versions with qkscope's linearAttention() on the same seeded inputs, and compares both the weights (for a short sequence, where they can be drawn) and the outputs. The error of FAVOR+ falls roughly like $1/\sqrt m$; elu + 1 has a fixed error, because it is a different kernel. Sharper inputs (a larger input scale) make softmax peakier, which both approximations find harder.

Be prepared for how slowly FAVOR+ converges. The kernel estimate is unbiased, but its relative variance grows roughly like $e^{\lVert q + k\rVert^2/\sqrt d}/m$, so for inputs of typical size it takes hundreds or thousands of features to get the error of the *outputs* down to a few percent. Performer mitigates this with orthogonal random directions, redrawing them during training, and keeping queries and keys small; the figure uses plain independent Gaussian directions, so what you see is the basic estimator.`,
    },
    {
      id: 'c8-time',
      title: 'What it buys: time against L',
      body: r`The second figure times exact softmax attention against the two kernel versions as $L$ grows, for head width $d = 64$ or $128$. Every series runs in qkscope's core (WebAssembly). Exact softmax is timed twice: through forward(), which also returns its $L \times L$ intermediates for teaching, and through attention(), the tiled online-softmax kernels that never form them (chapter 7). On the log–log chart, exact attention has slope 2 and the kernel versions slope 1; the summary names the crossover, the first measured $L$ from which elu + 1 stays faster than the tiled softmax: the same comparison as the native benchmark (npm run bench:linear), measured in your browser.`,
    },
    {
      id: 'c8-sparse',
      title: 'Sparse attention: score fewer pairs',
      body: r`The other way out keeps softmax but restricts which pairs count.

- **Top-k**: score every pair coarsely, keep the $k$ largest scores of each row and take the softmax over them only. With $k \ge L_k$ it is plain softmax. It saves work in the weighted sum, but all pairs must still be scored to find the top $k$.
- **Sliding window plus global tokens** (Longformer, Beltagy et al. 2020; BigBird, Zaheer et al. 2020): query $i$ sees keys $j$ with $|i - j| \le w$, and a few global tokens see, and are seen by, everything. BigBird adds $r$ random keys per query, drawn once (seeded here), so that any two tokens are linked by a short path. The pattern is fixed in advance, so the pairs outside it are never scored: about $L(2w + 1 + r) + 2gL$ pairs instead of $L^2$.

The third figure computes both with qkscope's forward(), top-k with the topk_softmax normalizer and the window with the mask from qkscope's sparsePattern(), and measures the error against full softmax and the fraction of pairs kept.`,
    },
    {
      id: 'c8-check',
      title: "Check your understanding",
      body: "Two questions to check your reading. Choose an answer to see at once whether it is right, and why.",
    },
  ],
  fig1: {
    title: 'Figure 8.1. Linear attention against softmax attention',
    caption: r`The elu + 1 weights have a similar layout to softmax but are visibly flatter: a different kernel, not an approximation. FAVOR+ weights get closer to softmax as the number of random features $m$ grows, and the error chart falls roughly like $1/\sqrt{m}$ (noisy: one draw of features per $m$). Turn on the causal mask: the same prefix-sum trick gives the causal version, compared with the core's causal softmax.`,
    map: 'Feature map',
    elu: 'elu + 1',
    favor: 'FAVOR+ (random features)',
    m: 'Random features m',
    mHint: 'FAVOR+ only; elu + 1 always has m = d = 8. The error curve runs to m = 4096.',
    sigma: 'Input scale',
    sigmaHint: 'Larger inputs make softmax sharper.',
    causal: 'Causal (prefix sums)',
    softmaxTitle: 'Softmax weights (qkscope)',
    approxTitle: 'Linear attention weights ({map})',
    errorTitle: 'Output error against softmax',
    errorLabel: 'Relative output error against the number of random features m',
    axisM: 'random features m',
    axisErr: 'relative output error',
    seriesFavor: 'FAVOR+',
    seriesElu: 'elu + 1',
    marker: 'm = {m}',
    summary: 'Relative output error against softmax: elu + 1 {elu}, FAVOR+ with m = {m}: {favor}.',
  },
  fig2: {
    title: 'Figure 8.2. Exact and linear attention, time against L',
    caption: r`Exact attention grows like $L^2$ (slope 2 on this chart), the kernel versions like $L$ (slope 1). At short lengths the kernel versions can be slower, since their cost per token is $m d$ rather than $L d$; the crossing point moves with $m$. Timings are from your device, median of a few warm runs.`,
    run: 'Run',
    maxL: 'Largest L',
    preview: 'Quick run up to L = {L} on this device, just now; press Run to measure up to the largest L.',
    notRun: 'Nothing measured yet: press Run (a few seconds at most).',
    running: 'Measuring… {done} of {total}',
    done: 'Done: median of {reps} warm runs per point, on this device, just now.',
    label: 'Time in milliseconds against L, log–log',
    axisL: 'L',
    axisMs: 'milliseconds',
    core: 'softmax, qkscope',
    tiled: 'softmax, qkscope tiled (attention())',
    elu: 'linear, elu + 1, qkscope',
    favor: 'linear, FAVOR+ m = 64, qkscope',
    dim: 'Head width d',
    summary: 'At L = {L}: exact softmax (tiled) {exact} ms, linear elu + 1 {lin} ms.',
    cross: 'Linear elu + 1 is faster than the tiled softmax from L = {L} on.',
    noCross: 'Linear elu + 1 is not yet faster than the tiled softmax at L = {L}.',
  },
  fig3: {
    title: 'Figure 8.3. Top-k and sliding-window sparsity against full softmax',
    caption: r`Top-k keeps the largest weights, so on these inputs its error is lower than the window's at every fraction of pairs kept; but it still scores every pair. The window scores only the pairs it keeps, and global tokens let information cross the whole sequence. Both reach zero error when nothing is dropped ($k = L$, or $w = L - 1$). The chart traces error against the fraction of pairs kept for every $k$ and every $w$ (with the current number of global tokens); the marker is the current setting.`,
    pattern: 'Pattern',
    topk: 'Top-k',
    window: 'Window + global',
    k: 'k (keys kept per row)',
    w: 'Window half-width w',
    g: 'Global tokens g',
    r: 'Random keys r (BigBird)',
    rHint: 'Window pattern only: r extra keys per row, drawn with the seed.',
    fullTitle: 'Full softmax weights',
    sparseTitle: 'Sparse weights',
    chartLabel: 'Relative output error against the fraction of pairs kept',
    errTitle: 'Relative output error',
    axisFrac: 'fraction of pairs kept',
    axisErr: 'relative output error',
    seriesTopk: 'top-k (k = 1…L)',
    seriesWindow: 'window + {g} global + {r} random (w = 0…L−1)',
    current: 'now',
    summary: 'Kept {kept} of pairs, scored {scored}; relative output error {err}, largest weight change {dw}.',
  },
  quiz: {
    correct: "Right.",
    wrong: "Not quite.",
    questions: [
      {
        q: "Linear attention computes φ(Q)(φ(K)ᵀV). How does its cost grow with the sequence length L?",
        options: ["Linearly: O(L d²)", "Quadratically: O(L² d)", "Cubically"],
        answer: 0,
        why: "φ(K)ᵀV is a d × d_v matrix computed once, so the L × L matrix is never formed.",
      },
      {
        q: "What does BigBird's sparse pattern combine?",
        options: ["A sliding window only", "A window, global tokens and random links", "The top-k keys of each query"],
        answer: 1,
        why: "Longformer uses a window plus global tokens; BigBird adds random links.",
      },
    ],
  },
} satisfies ChapterText & Record<string, unknown>;

export type Ch8Text = typeof en;
