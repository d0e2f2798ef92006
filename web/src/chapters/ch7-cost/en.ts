/**
 * English text of chapter 7 ("What attention costs, measured"): time and memory against L
 * for every scoring function, the broadcast vs fused additive attention, and why linear
 * concat ignores the query. Facts: docs/facts.md §2, §7.
 */
import type { ChapterText } from '../types';

const r = String.raw;

export const en = {
  id: 'ch7',
  kicker: 'Chapter 7',
  title: 'What attention costs, measured',
  lede: 'Cost claims about scoring functions travel far from the code that produced them. This chapter measures time and memory in your own browser, separates what a scoring function costs from what one implementation of it costs, and shows one cheap scoring function that quietly stops depending on the query.',
  sections: [
    {
      id: 'c7-count',
      title: 'Counting before timing',
      body: r`For $L_q$ queries and $L_k$ keys of width $d$, every scoring function in this tutorial fills the same $L_q \times L_k$ score matrix, so all of them do at least $L_q L_k$ units of work. What differs is the work per pair:

- dot, scaled dot and cosine: one length-$d$ dot product per pair, $L_q L_k d$ multiply–adds;
- bilinear $q^\top W k$: project the queries once ($L_q d_q d_k$), then a dot product per pair;
- additive $v^\top \tanh(W_q q + W_k k + b)$: project once, then per pair a length-$d_h$ sum, $d_h$ evaluations of $\tanh$ and a dot product with $v$, so $L_q L_k d_h$ $\tanh$ calls;
- linear concat $w^\top [q; k]$: one number per query and one per key, then a single addition per pair;
- negative squared Euclidean distance $-\lVert q - k\rVert^2$: the same $L_q L_k d$ as the dot product, written as $2\,q^\top k - \lVert q\rVert^2 - \lVert k\rVert^2$ with one norm per query and per key.

Memory is a separate question. An implementation that *stores* the scores and the weights needs $2 L_q L_k$ floats, which for one head at $L = 4096$ in float32 is already 128 MB. That is a property of the implementation, not of the scoring function: tiled kernels with an online softmax (FlashAttention, Dao et al. 2022) compute exactly the same output while keeping only $O(L d)$ numbers. The saying "scaled dot product runs out of memory at $L = 4096$" is about the naive code path.`,
    },
    {
      id: 'c7-time',
      title: 'Time and memory against L, in your browser',
      body: r`The figure below times qkscope's forward pass (the C++ core compiled to WebAssembly, one thread) for each scoring function at growing $L = L_q = L_k$. When the figure comes into view it runs a quick sweep at small $L$; press **Run** to measure up to the largest $L$. Each point is the median of a few warm runs, and a series stops early if one run gets slow, so a phone can take part too. Your numbers depend on your device and on what else it is doing; the *shape* of the curves is what carries over.

The memory chart needs no timing: it is computed from the shapes. It is an estimate of the big buffers only, for one head and one sequence; multiply by heads × batch for a real layer.`,
    },
    {
      id: 'c7-paths',
      title: 'Same attention, three code paths: naive, tiled, broadcast',
      body: r`Figure 7.1 timed the teaching path: forward() hands back every intermediate, so it writes four $L \times L$ matrices per call. The same output can be computed without them. qkscope's **tiled** path (attention(), a second WebAssembly module built with SIMD) walks the keys in blocks and keeps a running maximum and a running sum per query row, the online softmax of FlashAttention (Dao et al. 2022, Algorithm 1); it returns only the output and one logsumexp per row. Its memory is $O(L d)$: the inputs, the output and one tile, never an $L \times L$ matrix. The third path is the textbook broadcast additive attention in plain JavaScript, which materialises two $L \times L \times d_h$ tensors.

Figure 7.2 times the three paths for scaled dot and additive scoring at $d = 64$, up to $L = 4096$, in this page's Web Worker so the page stays responsive, and counts the bytes each call hands back. The naive path stops at $L = 2048$ (at 4096 its four $L \times L$ copies alone would be 256 MB) and the broadcast one at $L = 1024$ (at 2048 its two tensors would take 512 MB); it runs in the worker too, so even its calls of about a second never freeze the page. The tiled path is not free: it does the same $O(L^2 d)$ arithmetic, so its time still grows like $L^2$. What it removes is the memory traffic of the big matrices, and with it the $L^2$ memory.`,
    },
    {
      id: 'c7-additive',
      title: '“Additive is 3 to 5 times slower”: which additive?',
      body: r`A figure often repeated is that additive attention is "3 to 5 times slower than scaled dot product at $L = 512$, $d = 512$". Measured with the common PyTorch implementation on one CPU thread, it is far slower than that: in this project's native benchmark that module takes about **a second** (1010 ms) at $L = d_h = 512$, forty times as long as qkscope's fused additive kernel on the same inputs (25 ms). Figure 7.3 measures the ratio against scaled dot in your browser. The reason is the way that implementation is written: it broadcasts the projected queries against the projected keys,

$$E_{ijc} = (W_q q_i)_c + (W_k k_j)_c + b_c, \qquad T = \tanh(E), \qquad S_{ij} = \sum_c T_{ijc}\, v_c,$$

which materialises two $L_q \times L_k \times d_h$ tensors: at $L = 512$ and $d_h = 512$ that is 134 million elements each, written to memory and read back.

The inherent cost is smaller: $L_q L_k d_h$ evaluations of $\tanh$ plus as many multiply–adds, and none of it needs to be stored. qkscope has two additive scorers that avoid the big tensor, in two degrees. The one in this page's WebAssembly core works **one query row at a time**: for query $i$ it forms an $L_k \times d_h$ slab $\tanh(W_q q_i + W_k k_j + b)$ over all keys $j$, multiplies it by $v$ to get row $i$ of $S$, and reuses the slab for the next row, so it holds $L_k d_h$ numbers instead of $L_q L_k d_h$. The **fused** tiled kernel goes further (it runs in native builds and behind attention() in this page's tiled module, the dashed additive curve of Figure 7.2): it keeps the length-$d_h$ loop of each query–key pair in registers and stores no slab at all. Figure 7.3 implements the textbook broadcast version in plain JavaScript next to the row-by-row scorer from the core, checks that both give the same scores, and times both against scaled dot. Neither number is "the" cost of additive attention; the fair comparison is an implementation that never stores the $L_q \times L_k \times d_h$ tensor against scaled dot done as well.`,
    },
    {
      id: 'c7-linear',
      title: 'A cheap scoring function that ignores the query',
      body: r`Linear concat scores a pair with one weight vector applied to the concatenation, $f(q, k) = w^\top [q; k]$. It is the cheapest scoring function here, and it is often described as merely "weaker". It is worse than that. Split $w$ into its query half and its key half:

$$w^\top [q_i; k_j] = w_q^\top q_i + w_k^\top k_j = a_i + b_j.$$

The first term depends on the row only. Softmax over a row does not change when the same constant is added to the whole row, so it cancels:

$$\frac{e^{a_i + b_j}}{\sum_{j'} e^{a_i + b_{j'}}} = \frac{e^{b_j}}{\sum_{j'} e^{b_{j'}}}.$$

Every query gets the **same** weights: the ranking of the keys is fixed before any query is seen. Figure 7.4 lets you draw new queries: the linear-concat heatmap does not move, while scaled dot product reacts to each new query. Additive attention escapes this only because $\tanh$ sits between the sum and $v$, so the query and key terms no longer separate.`,
    },
    {
      id: 'c7-check',
      title: "Check your understanding",
      body: "Two questions to check your reading. Choose an answer to see at once whether it is right, and why.",
    },
  ],
  fig1: {
    title: 'Figure 7.1. Forward time and memory against L, for each scoring function',
    caption: r`On the log–log time chart, a slope of 2 means the cost grows like $L^2$: doubling $L$ quadruples the time, for every scoring function once $L$ is large enough. Additive sits well above the others because it calls $\tanh$ $d_h$ times per pair; linear concat and the dot-product family are close together. In the memory chart, the stored score and weight matrices grow like $L^2$ while the inputs and outputs a tiled kernel keeps grow like $L$; the broadcast additive tensor is larger again by a factor $d_h$.`,
    run: 'Run',
    running: 'Measuring… {done} of {total}',
    preview: 'Quick run up to L = {L} on this device, just now; press Run to measure up to the largest L.',
    notRun: 'Nothing measured yet: press Run (about one to three seconds).',
    done: 'Done: median of {reps} warm runs per point, on this device, just now.',
    maxL: 'Largest L',
    maxLHint: 'Larger L takes longer; 512 is fine on most phones.',
    d: 'Width d (= d_h for additive)',
    timeTitle: 'Forward time (median)',
    timeLabel: 'Forward time in milliseconds against L, log–log, one series per scoring function',
    memTitle: 'Memory of the big buffers (estimate)',
    memLabel: 'Estimated memory in megabytes against L, log–log',
    axisL: 'L = L_q = L_k',
    axisMs: 'milliseconds',
    axisMb: 'MB (float32, one head)',
    memScores: 'S and P stored (2·L²)',
    memForward: 'forward() copies (4·L²)',
    memBroadcast: 'broadcast additive (2·L²·d_h)',
    memTiled: 'tiled kernel: Q, K, V, O (4·L·d)',
    summary: 'At L = {L}: scaled dot {dot} ms, additive {add} ms, {ratio}× scaled dot.',
    memNote: 'At L = 4096 one head stores {s} for S and P, against {t} for Q, K, V and O.',
  },
  paths: {
    title: 'Figure 7.2. Naive, tiled and broadcast attention against L, time and memory',
    caption: r`Solid lines: the naive path (forward(), every intermediate); dashed: the tiled path (attention(), online softmax); same colour, same scoring function. Both times grow like $L^2$, but the naive path's returned memory grows like $L^2$ (four $L \times L$ float32 matrices) while the tiled path's grows like $L$: the output $L \times d$ and one logsumexp per row. Memory here is the bytes each call hands back (for the broadcast version, the two tensors it allocates), counted in this page, not an estimate.`,
    maxLHint: 'L = 4096 takes a few seconds per point on a laptop.',
    caps: 'd = 64, one head; additive with dₕ = {dh}. Naive stops at L = {naive}, broadcast at L = {broadcast} (their L² and L²·dₕ buffers); tiled goes to 4096.',
    timeTitle: 'Time (median)',
    timeLabel: 'Time in milliseconds against L, log–log, naive, tiled and broadcast paths',
    memTitle: 'Memory handed back per call',
    memLabel: 'Bytes returned per call in megabytes against L, log–log',
    axisMb: 'MB',
    naiveDot: 'scaled dot, naive (forward)',
    tiledDot: 'scaled dot, tiled (attention)',
    naiveAdd: 'additive, naive (forward)',
    tiledAdd: 'additive, tiled (attention)',
    broadcast: 'additive, broadcast (JS)',
    summary: 'At L = {L}, scaled dot: naive {naive} ms and {nb} handed back; tiled {tiled} ms and {tb}.',
    memNote: 'Tiled at L = {L}: {b} per call, {per} bytes per entry of the L × d output (d = {d}): O(L d), no L × L matrix.',
  },
  fig2: {
    title: 'Figure 7.3. Additive attention, broadcast vs row by row, against scaled dot',
    caption: r`The broadcast version computes the same scores (the difference shown is float32 rounding) but writes and reads two $L^2 d_h$ tensors, so its time grows with memory traffic and its memory with $L^2 d_h$. The core's row-by-row additive scorer does the same arithmetic and holds only one $L \times d_h$ slab at a time. Compare both ratios with the claimed 3–5×: the ratio depends on the implementation far more than on the formula. In this project's native benchmark (one CPU thread, $L = d_h = 512$), PyTorch's broadcast module takes about 1010 ms and qkscope's fused additive kernel 25 ms.`,
    run: 'Run',
    maxL: 'Largest L',
    dh: 'Hidden size dₕ',
    timeTitle: 'Time against L',
    timeLabel: 'Time in milliseconds against L for broadcast additive, row-by-row additive and scaled dot',
    ratioTitle: 'Slowdown against scaled dot',
    ratioLabel: 'Time divided by scaled dot time, per L',
    axisRatio: '× scaled dot',
    broadcast: 'additive, broadcast (JS)',
    fused: 'additive, row by row (qkscope)',
    dot: 'scaled dot (qkscope)',
    same: 'Same scores: largest |S_broadcast − S_row| = {diff} at L = {L}; the broadcast tensors took {bytes}.',
    summary: 'At L = {L}: broadcast {b}× and row by row {f}× scaled dot. Claimed: 3–5×.',
  },
  fig3: {
    title: 'Figure 7.4. Linear concat ignores the query',
    caption: r`Draw new queries: the queries heatmap changes, the scaled-dot weights change, and the linear-concat weights stay exactly where they were, identical in every row. That is the cancellation $a_i + b_j \to b_j$ at work: the score's query term is constant along a row, and softmax removes constants.`,
    newQueries: 'Draw new queries',
    querySet: 'Query set',
    queries: 'Queries Q',
    lc: 'Weights, linear concat',
    sd: 'Weights, scaled dot',
    changeStart: 'This is query set 0, the reference: draw new queries and this line gives the largest change in each set of weights.',
    change: 'Since query set 0, the largest change in the linear-concat weights is {lc}; in the scaled-dot weights, {sd}.',
  },
  quiz: {
    correct: "Right.",
    wrong: "Not quite.",
    questions: [
      {
        q: "“Scaled dot product runs out of memory at L = 4096” describes…",
        options: ["the scoring function", "an implementation that stores the $L_q$ × $L_k$ matrix", "every GPU"],
        answer: 1,
        why: "Tiled attention with an online softmax never stores S and needs O(L d) memory, with the same result.",
      },
      {
        q: "Why is the common PyTorch module for additive attention so slow at L = $d_h$ = 512?",
        options: ["tanh is expensive to evaluate", "It broadcasts to $L_q$ × $L_k$ × $d_h$ tensors, 134,217,728 elements each", "Softmax dominates"],
        answer: 1,
        why: "The inherent work is $L_q$ $L_k$ $d_h$ tanh evaluations; a fused kernel that never stores the tensor does it far faster.",
      },
    ],
  },
} satisfies ChapterText & Record<string, unknown>;

export type Ch7Text = typeof en;
