/**
 * 第 10 章（从公式到代码）的简体中文文字。Terms follow docs/facts.md §11.
 * Facts: docs/facts.md §2, §5, §10.
 */
import type { Ch10Text } from './en';

const r = String.raw;

export const zh: Ch10Text = {
  id: 'ch10',
  kicker: '第 10 章',
  title: '从公式到代码',
  lede: '把前面各章的公式写成可以直接粘贴的简短 PyTorch 代码：每一种评分函数、各种掩码和归一化函数；同时列出让注意力代码“悄悄算错”的形状与极性错误，以及让它“当场出错”的两种溢出。',
  sections: [
    {
      id: 'c10-intro',
      title: '经过核心校验的代码',
      body: r`本章的每一段代码都是本项目中的真实文件。测试会把同一组输入分别交给这段代码（用 PyTorch 运行）和驱动本教程所有图的 WebAssembly 核心，并要求两者给出相同的数值：代码在 float64 下的结果与核心的 float32 结果之差，必须满足本项目对任何快速路径都适用的那条容差规则。只要代码与核心有一处不一致，测试就会失败。

代码沿用本教程的约定：$Q$ 为 $L_q \times d_q$，$K$ 为 $L_k \times d_k$，$V$ 为 $L_k \times d_v$；分数、掩码和权重都是 $L_q \times L_k$，每个查询占一行。批次维和头维可以加在最前面；所有函数只在最后一维上做归约。`,
    },
    {
      id: 'c10-scores',
      title: '评分函数',
      body: r`第 2 章的每种评分函数各对应一个函数，返回原始分数矩阵；其中缩放点积已经包含了 $1/\sqrt{d_k}$。有两个细节比看上去更重要：

- **余弦相似度**把每个向量各自除以 $\max(\lVert x \rVert, \epsilon)$，因此零向量的分数是 0，而不是 $0/0$。
- **加性注意力**把 $W_q q$ 与 $W_k k + b$ 广播成 $L_q \times L_k \times d_h$ 的张量。这是最短的正确写法，也是最常见的写法，但它要存下 $L_q L_k d_h$ 个数；第 7 章实测了这样做的代价。`,
    },
    {
      id: 'c10-shapes',
      title: '排查广播错误的形状清单',
      body: r`广播会把许多形状错误变成错误的数值，而不是报错。在相信一个注意力层之前，先逐条检查：

1. 只转置 $K$ 的最后两维（K.transpose(-2, -1)），不要把所有维都倒过来：对带批次的张量，倒转全部轴会把批次维和头维打乱。
2. 分数的形状应为 $(B, H, L_q, L_k)$。断言一次即可；当 $L_q = L_k$ 时，一个被转置成 $(L_k, L_q)$ 的矩阵完全不会被察觉。
3. softmax 沿键的方向做，即 dim=-1。沿查询方向归一化，得到的是每列和为 1。
4. 形状为 $(B, L_k)$ 的填充掩码必须先变成 $(B, 1, 1, L_k)$。广播从末尾的维度开始对齐，未经变形的 $(B, L_k)$ 会被当成 $(L_q, L_k)$：运气好时报错，$B = L_q$ 时则悄悄用错了行。
5. 因果掩码是 $L_q \times L_k$，不是 $L \times L$；对角线怎样对齐（左上对齐或右下对齐）是需要明确做出的决定，而不是可以忘掉的默认值。
6. 测试时让 $L_q \ne L_k$、（允许时）$d_q \ne d_k$，用奇数尺寸，批次大于 1：尺寸全部相等，恰好会掩盖上面这些错误。`,
    },
    {
      id: 'c10-masks',
      title: '掩码',
      body: r`掩码是布尔型的保留掩码，True 表示该查询可以关注该键，多个掩码用 & 组合。掩码作用在评分之后的 logit 上，写入 $-\infty$。$-\infty$ 在任何浮点类型中都是精确的；像 $-10^9$ 这样的大负数填充值在 fp16 中无法表示：转换为 fp16 后照样变成 $-\infty$（masked_fill 则直接以溢出错误拒绝它），而 $-10^4$ 虽然可以表示，却只是一个很大的负数，并不是真正的掩码（第 5 章）。

当 $L_q > L_k$ 且采用右下对齐时，即使没有任何填充，前 $L_q - L_k$ 个查询也看不到任何键。这些行需要下一段代码中处理空行的规则。`,
    },
    {
      id: 'c10-polarity',
      title: '各个库的掩码极性',
      body: r`你最可能混用的几个库，对同一个填充掩码采用了相反的极性。用一个库的约定去读另一个库的掩码，模型就会悄悄地关注填充、忽略真实的词元。下表列出了这些约定，代码则把同一个保留掩码转换成每一种写法。`,
    },
    {
      id: 'c10-normalizers',
      title: '归一化函数，以及没有键的行',
      body: r`带温度系数的 softmax 先减去行最大值，再除以 $\tau$（只除一次），然后取指数；硬注意力是 argmax 的独热向量，并列时取下标最小的键；sparsemax 把 $z/\tau$ 投影到单纯形上（Martins 与 Astudillo 2016，算法 1）；top-k softmax 只保留最大的 $k$ 个 logit。对于看不到任何键的行，这些函数都给出全 0 的权重，而直接调用 torch.softmax 会得到 NaN（$0/0$）。第 6 章的 Gumbel-softmax 没有放在这里：它的噪声是随机的，无法与核心逐个数值地比对。`,
    },
    {
      id: 'c10-maxshift',
      title: 'softmax 为什么要减去行最大值',
      body: r`给一整行减去同一个常数，softmax 的结果不变，所以在精确算术中减去行最大值不需要任何代价。而在浮点运算中，正是这一步让 softmax 不至于失效：当 $x$ 超过约 $88.72$（fp32）或约 $11.09$（fp16）时，$e^x$ 会上溢为 $\infty$（这两个数分别是最大有限值 $3.4 \times 10^{38}$ 和 $65504$ 的对数）。此时最大的那一项变成 $\infty / \infty = \text{NaN}$。减去最大值之后，每个指数项都不超过 $e^0 = 1$，不可能再溢出。

下图在核心中用两种方式计算行 $[c,\ c-1,\ c-2]$。把 $c$ 拖过所选类型的阈值：朴素算法的权重变成 NaN 和 0，稳定算法的权重则纹丝不动，因为它只取决于行内各项之间的差。`,
    },
    {
      id: 'c10-overflow',
      title: '当 q·k 本身就让 fp16 溢出',
      body: r`减去最大值保护的是指数运算，而不是分数本身。宽度为 $d$ 的点积是 $d$ 个乘积之和，因此当 $q = k = (a, \dots, a)$ 时，它等于 $d\,a^2$。fp16 的最大有限值是 $65504$；分数达到 $65520$ 或更大时会舍入为 $\infty$，之后任何 softmax 都无法挽回：$\infty - \infty$ 是 NaN。当 $a = 4$ 时，$d = 4096$ 就已经如此。先除以 $\sqrt{d}$，分数就只有 $\sqrt{d}\, a^2$，小得多：这是需要缩放的又一个理由，也是输入为 fp16 时要用 fp32 计算分数的原因。`,
    },
    {
      id: 'c10-mixed',
      title: '混合精度下用 fp32 计算分数',
      body: r`混合精度用 fp16 或 bf16 存储 $Q$、$K$、$V$，以节省显存和带宽。但分数和 softmax 仍应以 fp32 计算：在做乘积 $QK^\top$ 之前先转换为 fp32，用 $-\infty$ 做掩码，减去行最大值，处理空行，最后再把输出转换回原来的类型。在 GPU 上的 torch.autocast 中，矩阵乘法本身以 fp16 运行，而 softmax 属于 autocast 以 fp32 运行的算子，因此 $QK^\top$ 的溢出在 softmax 看到它之前就已经发生了。出于同样的原因，融合内核（FlashAttention 及其后续版本）以 fp32 累加分数和 softmax 的统计量。`,
    },
    {
      id: 'c10-gat',
      title: '图中的线性拼接：GAT 与 GATv2',
      body: r`第 2 章说明了线性拼接分数 $w^\top [q; k] = w_q \cdot q + w_k \cdot k$ 与查询无关：$w_q \cdot q$ 对同一行的每个键都相同，在 softmax 中被消去。最初的图注意力网络（GAT，Veličković 等 2018，式 3）对从节点 $i$ 指向邻居 $j$ 的边打分：

$$e_{ij} = \operatorname{LeakyReLU}\big(a^\top [W h_i \,\|\, W h_j]\big).$$

LeakyReLU 是单调函数，而 $a^\top[W h_i \| W h_j]$ 可以拆成只含 $i$ 的一项与只含 $j$ 的一项之和，因此记 $a = [a_1; a_2]$，按 $e_{ij}$ 给邻居排序就等同于只按 $a_2^\top W h_j$ 排序：对每个节点 $i$ 都一样。Brody、Alon 与 Yahav（2022，*How Attentive are Graph Attention Networks?*）称之为**静态注意力**：排名最高的节点，是所有以它为邻居的节点的首选。他们提出的 GATv2 把非线性移到里面：

$$e_{ij} = a^\top \operatorname{LeakyReLU}\big(W [h_i \,\|\, h_j]\big),$$

这就是把 tanh 换成 LeakyReLU 的加性分数，可以让每个节点对邻居给出不同的排序（动态注意力）。这与线性拼接和加性注意力之间的区别是同一个道理，只是换到了图上；图 10.3 在一个小图上展示了两者。`,
    },
    {
      id: 'c10-training',
      title: '训练建议及其理由',
      body: r`- **加性注意力：$W_q$ 和 $W_k$ 的初始值要小。**分数是 $v^\top \tanh(W_q q + W_k k + b)$。如果激活前的值很大，tanh 就会饱和，导数 $1 - \tanh^2$ 接近 0，投影矩阵也就学不动了；初始权重小，tanh 就从近似线性的区间开始工作。
- **加性注意力：$d_h$ 不要太小。**计算量随 $L_q L_k d_h$ 增长，但 $d_h$ 也是分数能够利用的方向数。$d_h = 1$ 时，对每个查询，键的排序都只取决于 $\operatorname{sign}(v)\, w_k^\top k$，tanh 饱和只改变间距，且每个查询改变得不一样（第 2 章）。
- **双线性注意力：对 $W$ 做正则化。**$W$ 有 $d_q d_k$ 个参数，远多于分数所需，而且 $q^\top W k$ 没有上界。权重衰减或低秩分解 $W = U^\top V$ 可以防止过拟合；从接近单位矩阵的 $W$ 开始，就是从点积开始，这时第 3 章关于 $\sqrt{d}$ 的论证同样适用，所以也要缩放。
- **余弦相似度：学习一个温度系数。**余弦分数落在 $[-1, 1]$ 之间，对 softmax 来说太平缓；缩放余弦注意力会除以一个可学习的 $\tau$（Liu 等 2022）。
- **始终保留一个缩放点积基线**，其余设置保持不变（第 9 章）。`,
    },
    {
      id: 'c10-check',
      title: '检验一下理解',
      body: r`关于本章的几个问题。选择一个答案，即可看到对错和原因。`,
    },
  ],
  code: {
    caption: '{file}，由 tests/wasm/pytorch-snippets.test.mjs 与核心比对运行',
    label: 'Python 代码：{file}',
  },
  polarity: {
    caption: '同一条规则的五种写法：查询 i 能否关注键 j？',
    colApi: '接口',
    colArg: '参数',
    colMeaning: '“True”（或 1）的含义',
    colShape: '形状',
    rows: [
      ['qkscope', 'mask, keyLength', 'True = 可以关注（填充以长度给出，没有极性）', '`(L_q, L_k)`'],
      ['PyTorch scaled_dot_product_attention', 'attn_mask: bool', 'True = 可以关注；浮点型掩码则直接加到分数上', '可广播到 `(B, H, L_q, L_k)`'],
      ['PyTorch nn.MultiheadAttention', 'key_padding_mask: bool', 'True = 忽略该键（填充）', '`(B, L_k)`'],
      ['Hugging Face Transformers', 'attention_mask', '1 = 真实词元，0 = 填充', '`(B, L_k)`'],
      ['PyTorch FlexAttention', 'mask_mod(b, h, q_idx, kv_idx)', '返回 True = 可以关注；`score_mod(score, b, h, q_idx, kv_idx)` 返回新的分数（偏置、软截断）', '对每个 `(b, h, i, j)` 调用'],
    ],
  },
  maxshift: {
    title: '图 10.1　[c, c − 1, c − 2] 的朴素 softmax 与稳定 softmax',
    caption: r`无论 $c$ 取何值，稳定算法的权重都相同：只有行内的差值起作用。朴素算法在指数项溢出之前都是对的。在 fp16 中，$c$ 还没到 11.09，三个指数项之和就先超过了 65504，所有权重都变成 0；$c$ 超过 11.09（fp32 中为 88.72）后，$e^c$ 本身就是 $\infty$，最大的一项为 $\infty/\infty = \text{NaN}$，其余各项则被 $\infty$ 除。这些数都来自核心在所选类型下用两种方式计算的 softmax。`,
    c: '最大的 logit c',
    dtype: '类型',
    naive: '朴素：exp(z) / Σ exp(z)',
    stable: '稳定：exp(z − max z) / Σ exp(z − max z)',
    key: '键',
    weight: '权重',
    chartTitle: '这一行的权重',
    colKey: '键',
    colLogit: 'logit',
    colNaive: '朴素',
    colStable: '稳定',
    ok: '没有溢出：两种算法结果一致。',
    broken: '朴素 softmax 溢出了：{inf} 个指数项为 ∞，{nan} 个权重为 NaN。稳定 softmax 不受影响。',
    sumOverflow: '每个指数项都是有限的，但它们的和溢出了：朴素算法的权重全部为 0。稳定 softmax 不受影响。',
    tableCaption: 'logit 与权重：朴素算法和稳定算法',
  },
  overflow: {
    title: '图 10.2　宽度 d 增大时 fp16 中的 q · k',
    caption: r`每个分量都等于 $a$ 时，$q \cdot k = d\,a^2$。fp16 的最大有限值是 $65504$；分数达到 $65520$ 或更大时会舍入为 $\infty$，这一行 softmax 也就失效了；缩放后的分数 $q \cdot k / \sqrt d$ 则远低于这个上限。分数由核心计算，判断也出自核心：它拒绝存储会让 fp16 溢出的分数。`,
    d: '宽度 d',
    a: '分量大小 a',
    colWhat: '分数',
    colValue: '数值（fp32）',
    colFp16: '在 fp16 中',
    dot: 'q · k',
    scaled: 'q · k / √d',
    fits: '放得下',
    overflows: '溢出 → ∞',
    limit: 'fp16 最大有限值：65504',
    tableCaption: '同一个分数在 fp32 与 fp16 中',
    chartTitle: '分数与 fp16 上限',
    axisScore: '分数（对数）',
    axisWhich: '分数',
    limitSeries: 'fp16 上限 65504',
    valueSeries: '分数',
  },
  gat: {
    title: '图 10.3　小图上的静态注意力与动态注意力',
    caption: r`每一行是一个节点，每一列是一个邻居；没有边的单元格画有斜线。左图使用线性拼接，每个节点都按同一个只取决于键的分数给邻居排序，所以拥有共同邻居的节点会首选同一个邻居：这就是静态注意力。右图使用加性注意力（即 GATv2 的形式，只是用 tanh 代替 LeakyReLU），每个节点可以按自己的方式排序。核心中没有 LeakyReLU。对左图这没有影响：GAT 在求和之后才施加 LeakyReLU，而它是单调函数，不会改变哪个邻居排在第一。右图则由 tanh 代替它，作为求和内部的非线性，正是这一点让排序随节点而变。改变种子即可抽取其他特征和参数。`,
    seed: '特征与参数的种子',
    staticTitle: '线性拼接（GAT）：静态',
    dynamicTitle: '加性（GATv2 形式）：动态',
    node: '节点',
    neighbour: '邻居',
    noEdge: '无边',
    first: '各节点的首选：{list}',
  },
  quiz: {
    correct: '正确。',
    wrong: '不对。',
    questions: [
      {
        q: 'nn.MultiheadAttention 收到 key_padding_mask = [[False, False, True]]。哪个键被忽略？',
        options: ['键 3', '键 1 和键 2', '没有：True 表示可以关注'],
        answer: 0,
        why: 'key_padding_mask 以 True 表示忽略，与 SDPA 的布尔型 attn_mask 和 FlexAttention 的 mask_mod 恰好相反。',
      },
      {
        q: '一行的 logit 为 [100, 99]。在 fp32 中，exp(z) / Σ exp(z) 的结果是什么？',
        options: ['[0.731, 0.269]', '[NaN, NaN]', '[1, 0]'],
        answer: 1,
        why: 'e^100 和 e^99 都超过了 fp32 的最大值（上限约为 e^88.72），所以每一项和总和都是 ∞，而 ∞/∞ 是 NaN。先减去最大值，得到的 logit 是 [0, −1]，其权重为 [0.731, 0.269]。',
      },
      {
        q: '分数的形状为 (B, $L_q$, $L_k$)，填充掩码为 (B, $L_k$)。使用掩码之前应该怎么做？',
        options: ['什么也不用做，广播会处理', '把它变形为 (B, 1, $L_k$)', '把它转置为 ($L_k$, B)'],
        answer: 1,
        why: '广播从末尾的维度开始对齐，(B, $L_k$) 会被当成 ($L_q$, $L_k$)。加上长度为 1 的查询轴后，它才会作用于本序列的每一个查询。',
      },
    ],
  },
};
