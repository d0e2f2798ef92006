/**
 * 第 1 章（什么是注意力分数）与图 1 的简体中文文字。Terms follow docs/facts.md §11.
 * Facts: docs/facts.md §1, §2. {{name}} slots are live numbers from the core.
 */
import type { Ch1Text } from './en';

const r = String.raw;

export const zh: Ch1Text = {
  id: 'ch1',
  kicker: '第 1 章',
  title: '什么是注意力分数',
  lede: '注意力在做加权混合之前，必须先判断每个查询与每个键有多匹配。本章说明这样的分数是什么、注意力的各个步骤按什么顺序执行，并手算一个小例子；页面上的每个数字都是实时算出的。',
  sections: [
    {
      id: 'score',
      title: '每个查询–键对，对应一个分数',
      body: r`注意力让每个词元作为**查询**（Query）去查看一组词元，即**键**（Key），并按一定权重混合它们的**值**（Value）。在混合之前，模型必须先回答：每个查询与每个键有多匹配？这正是**评分函数**（也叫打分函数）的工作：输入一个查询向量 $q$ 和一个键向量 $k$，输出一个实数，称为 logit（未归一化的分数）：

$$f(q, k) \in \mathbb{R}.$$

让每个查询与每个键两两打分，就得到分数矩阵 $S$，其中 $S_{ij} = f(q_i, k_j)$，形状为 $L_q \times L_k$：每个查询占一行，每个键占一列。归一化函数（通常是 softmax）把每一行变成非负、和为 1 的权重；查询 $i$ 的输出就是各个值向量的加权和 $o_i = \sum_j w_{ij}\, v_j$。

单独一个分数本身意义不大。给整行加上同一个常数，softmax 的结果不变，所以真正起作用的只是同一行内分数之间的差。应当把注意力分数理解为**相对的匹配强度**，而不是概率或置信度。`,
    },
    {
      id: 'pipeline',
      title: '计算顺序',
      body: r`本教程中的每个注意力层都执行同样的五个步骤，顺序始终如下：

1. **打分**：对每一对计算 $z_{ij} = f(q_i, k_j)$。
2. **缩放**，如有偏置则加上偏置。缩放点积注意力乘以 $1/\sqrt{d_k}$。
3. **掩码**：不允许关注的位置（例如填充的键、未来的词元）的 logit 设为 $-\infty$。
4. **归一化**：用温度系数 $\tau$ 对每一行计算 $w_{ij} = \exp(z_{ij}/\tau) \,/\, \sum_{j'} \exp(z_{ij'}/\tau)$。
5. **加权求和**：$o_i = \sum_j w_{ij}\, v_j$。

掩码必须放在打分**之后**。一种看似省事的做法是在打分之前先把填充位置的键向量置零，但这行不通：零向量照样会得到分数 $q \cdot 0 = 0$，而 $\exp(0) = 1$ 一点也不小。在下面的例子中，把键 3 置零后，查询 1 仍然分给它 {{zeroKeyW}} 的权重。正确的做法是把它的 logit 设为 $-\infty$，这样它的权重恰好为 $0$，查询 1 的权重变为 $ {{padW}}$。`,
    },
    {
      id: 'qkv',
      title: 'q、k、v 从哪里来',
      body: r`查询、键和值并不是现成的，而是由三个可学习的矩阵从词元计算出来的。把词元向量按行堆成 $X$（$L \times d_{\text{model}}$），则

$$Q = X W_Q, \qquad K = X_{\text{kv}} W_K, \qquad V = X_{\text{kv}} W_V,$$

其中 $W_Q$ 的形状为 $d_{\text{model}} \times d_q$，$W_K$ 为 $d_{\text{model}} \times d_k$，$W_V$ 为 $d_{\text{model}} \times d_v$。因此同一个词元可以扮演三种角色：它要找什么（查询），它凭什么被找到（键），以及被找到之后贡献什么（值）。

- **自注意力**：$X_{\text{kv}} = X$。查询、键和值来自同一个序列，所以一次处理整个序列时 $L_q = L_k$（Vaswani 等 2017）。使用 KV 缓存逐步生成的解码器是例外：少数几个新查询要关注所有已缓存的键，所以 $L_q < L_k$（见第 5 章）。
- **交叉注意力**：查询来自一个序列，键和值来自另一个序列，例如解码器关注编码器的输出，最早用于机器翻译的注意力模型就是这样（Bahdanau 等 2015）。这时 $L_q \ne L_k$ 是常态，两侧的向量宽度甚至可以不同。
- **多头注意力**：$H$ 个头各有自己的 $W_Q^{(h)}, W_K^{(h)}, W_V^{(h)}$，宽度较小（通常 $d_k = d_{\text{model}}/H$），各自独立地打分和混合；各头的输出拼接起来，再经 $W_O$ 投影（Vaswani 等 2017，§3.2.2）。本教程讨论的一切都发生在单个头之内。

下面的例子取最简单的情形 $W_Q = W_K = W_V = I$，于是 $Q = K = V = X$，每个数字都可以手算验证。`,
    },
    {
      id: 'worked',
      title: '逐步手算一个例子',
      body: r`取三个词元，每个词元有四个特征，并使用最简单的投影 $W_Q = W_K = W_V = I$，于是查询、键、值是同一个矩阵：

$$X = {{X}}, \qquad Q = K = V = X.$$

**第 1 步：原始分数。** 用点积打分，原始分数为 $QK^\top = XX^\top$：

$$XX^\top = {{XXt}}.$$

对角线是每个词元与自身的分数，在这里也是每一行中最大的。这是本例的性质，而不是注意力的普遍规律：$W_Q = W_K$ 使每个分数都等于 $x_i \cdot x_j$，而且每个词元的范数都是 $\sqrt 2$，由柯西–施瓦茨不等式，没有其他词元与 $x_i$ 的分数能超过 $x_i$ 与自身的分数。若 $W_Q \ne W_K$，或词元的范数不同，某个键的分数就可能超过查询自身的词元。词元 1 与词元 2 没有共同特征，所以它们的分数为 0。

**第 2 步：缩放。** 缩放点积注意力除以 $\sqrt{d_k} = \sqrt{ {{dk}} } = {{sqrtdk}}$：

$$S = \frac{XX^\top}{ {{sqrtdk}} } = {{S}}.$$

**第 3 步：逐行 softmax。** 第 1 行的分数为 $ {{s1}}$。softmax 先取指数，再除以它们的和；这个和的对数（该行的 log-sum-exp）为 $ {{lse1}}$：

$$w_1 = \operatorname{softmax}\big( {{s1}} \big) = {{w1}}.$$

三行合在一起：

$$W = {{W}}.$$

第 1 行最大的权重落在键 {{top1}} 上：词元 1 最关注的是它自己。

**第 4 步：对值加权求和。** 输出的第 1 行用这些权重混合各个值向量：

$$o_1 = {{w11}}\, v_1 + {{w12}}\, v_2 + {{w13}}\, v_3 = {{o1}},$$

完整的输出为

$$O = WV = {{O}}.$$

本节的每个数字都是在页面加载时算出的，使用的正是驱动下方交互图的同一个 WebAssembly 核心。`,
    },
    {
      id: 'erratum',
      title: '一个值得复核的数字',
      body: r`这个例子流传很广。一篇被大量转载的文章把权重的第 1 行写成 $[0.387,\ 0.142,\ 0.471]$，并由此得出“词元 1 最关注词元 3”的结论。这两点都不对。上面实时算出的正确结果是 $ {{w1}}$：词元 1 最关注的是**它自己**。

不用计算器也能看出来。$XX^\top$ 的第 1 行是 $ {{raw1}}$，其中与自身的分数最大。乘以一个正的缩放系数和 softmax 都不改变大小顺序，所以无论怎样缩放，最大的权重都必然落在键 1 上。那组错误的数字加起来也等于 1，只检查“和是否为 1”发现不了问题；比较权重与分数的大小顺序才能发现。

一个值得养成的习惯：当注意力热力图似乎得出了意外的结论时，先检查每一行中权重的大小顺序是否与分数一致。`,
    },
    {
      id: 'playground',
      title: '动手试一试',
      body: r`下面的交互图在你设定的输入上运行同一个核心。它的初始输入就是上面的例子，所以权重的第 1 行为 {{w1text}}。接下来可以试试：

- 切换评分函数。图中显示的公式就是当前实际计算的公式；带参数的评分函数从随机种子初始化参数。
- 拖动温度系数。$\tau > 1$ 使每一行趋于均匀，熵随之增大；$\tau < 1$ 使权重向最大的分数集中，最大权重随之增大。
- 打开因果掩码，或减少有效键的个数（填充掩码），观察被屏蔽的格子变成斜线阴影：它们完全得不到权重。
- 把某个键向量全部改为 0，看看它是否仍然得到权重。`,
    },
    {
      id: 'compare',
      title: '一张表看全所有评分函数',
      body: r`第 2 章用实时输入比较各种评分函数；下表把它们的性质汇总在一处。名称、公式、参数以及是否允许 $d_q \ne d_k$ 都取自核心的注册表，也就是各图所用的同一份列表；其余各列是后面各章会展示的事实。计算量指得到 $S$ 所需的运算，在无关紧要处记 $L = L_q = L_k$，$d_h$ 为加性注意力的隐藏层宽度。`,
    },
    {
      id: 'c1-check',
      title: "检验一下理解",
      body: "用两个问题检验一下阅读效果。选择一个答案，即可立刻看到对错和原因。",
    },
  ],
  compare: {
    caption: '评分函数对比',
    colName: '评分函数',
    colFormula: 'f(q, k)',
    colParams: '参数',
    colCost: '计算 S 的开销',
    colDims: 'd_q\u00a0≠\u00a0d_k',
    colBounded: '有界',
    colQuery: '依赖查询',
    colScale: '需要缩放',
    colUse: '适用场景',
    none: '无',
    yes: '是',
    no: '否',
    rows: {
      dot: { cost: r`$L_q L_k d$`, bounded: '否', query: '是', scale: r`是：方差随 $d_k$ 增大`, use: '很少单独使用；缩放点积就是它加上缩放' },
      scaled_dot: { cost: r`$L_q L_k d$`, bounded: '否', query: '是', scale: r`已内置：$1/\sqrt{d_k}$`, use: '自然语言和视觉任务的默认选择；硬件支持最好' },
      cosine: { cost: r`$L_q L_k d$`, bounded: r`是，$[-1, 1]$`, query: '是', scale: '恰好相反：分数太平缓，需学习温度系数', use: '检索与向量搜索，不希望范数起作用时' },
      bilinear: { cost: r`$L_q d_q d_k + L_q L_k d_k$`, bounded: '否', query: '是', scale: r`是：$W$ 接近 $I$ 时方差约为 $d$`, use: '对齐来自不同空间的特征（如文本与图像）' },
      additive: { cost: r`$L_q d_q d_h + L_k d_k d_h + L_q L_k d_h$（tanh）`, bounded: r`是，$|f| \le \lVert v \rVert_1$`, query: '是', scale: '否（tanh 已使其有界）；初始权重要小', use: '小模型、RNN 编码器–解码器、图注意力' },
      linear_concat: { cost: r`$L_q d_q + L_k d_k + L_q L_k$`, bounded: '否', query: r`**否**：查询项在 softmax 中被消去`, scale: '否', use: '不宜用作注意力；它说明了为什么需要非线性' },
      neg_sq_euclidean: { cost: r`$L_q L_k d$`, bounded: r`有上界：$f \le 0$`, query: '是', scale: r`是：默认 $1/\sqrt{d_k}$`, use: '最近键匹配；满足 Lipschitz 条件的（L2）自注意力' },
    },
    missing: '尚未说明',
  },
  terms: {
    lead: '把指针移到某一项上，即可在图中看到它对应的单元格：',
    names: {
      S: '全部分数',
      s1: '查询 1 的分数（第 1 行）',
      W: '全部权重',
      w1: '查询 1 的权重（第 1 行）',
      w13: '查询 1 分给键 3 的权重',
      O: '全部输出',
      o1: '查询 1 的输出',
    },
  },
  figure: {
    title: '图 1.1　分数、权重与输出（实时计算）',
    caption: r`在这个例子中，每一行的最大权重都落在对角线上，因为 $W_Q = W_K$ 且所有词元的范数相同；换成其他输入则未必如此。分数热力图使用以 0 为中心的发散色板（低于 0 为蓝，高于 0 为红）；权重热力图使用固定范围 0 到 1 的顺序色板，因此修改输入后颜色仍可直接比较。带斜线阴影的格子是被屏蔽的位置：它们的 logit 为 $-\infty$，权重恰好为 0，而不只是很小。`,
    controls: '控件',
    score: '评分函数',
    formula: '公式',
    temperature: '温度系数 τ',
    temperatureHint: 'τ > 1 使每行更平缓，τ < 1 使其更尖锐',
    causal: '因果掩码',
    causalHint: '查询 i 只能看到键 j ≤ i（左上对齐）',
    keyLength: '有效键个数（填充掩码）',
    keyLengthValue: '{n} / {total}',
    seed: '参数随机种子',
    seedHint: '参数 {params} 由该种子初始化。',
    noParams: '该评分函数没有可学习的参数。',
    scaleUsed: '缩放系数',
    reset: '重置本图',
    sizes: '尺寸',
    lq: '$L_q$ 查询数',
    lk: '$L_k$ 键数',
    dq: '$d_q$',
    dk: '$d_k$',
    dv: '$d_v$',
    inputs: '输入',
    inputsHint: '可直接修改任意数字；每行对应一个词元。',
    matrixQ: '查询 Q',
    matrixK: '键 K',
    matrixV: '值 V',
    cellAria: '{m} 第 {i} 行第 {j} 列',
    invalidNumber: '不是有效数字，仍使用上一个有效值。',
    scoresTitle: '注意力分数',
    scoresNote: '缩放并掩码后、softmax 之前的 logit',
    weightsTitle: '注意力权重',
    weightsNote: 'softmax(分数 / τ)，每行之和为 1',
    outputTitle: '输出',
    outputNote: '权重 × V，每个查询一行',
    shape: '{rows} × {cols}',
    axisQuery: '查询',
    axisKey: '键',
    axisDim: '维度',
    cellLabel: '{row} {i}，{col} {j}：{value}',
    maskedCell: '已屏蔽',
    maskedLegend: '已屏蔽',
    legendScore: '分数',
    legendWeight: '权重',
    legendValue: '数值',
    statsTitle: '逐行诊断',
    statsHint: r`熵 $H = -\sum_j w_{ij} \log w_{ij}$：全部权重集中在一个键上时为 0，权重均匀分布时为 $\log L_k$。`,
    statsQuery: '查询',
    statsMax: '最大权重',
    statsArgmax: '所在的键',
    statsEntropy: '熵 H（奈特）',
    statsSupport: '有效支撑集大小 e^H',
    statsEmpty: '没有有效的键',
    errorTitle: '当前配置无法计算：',
    errorStale: '下方图表仍显示上一次有效的结果。',
    errorSameDim: '允许 $d_q \\ne d_k$ 的评分函数：{names}。',
  },
  quiz: {
    correct: "正确。",
    wrong: "不对。",
    questions: [
      {
        q: "在这个例子中，词元 1 给哪个键的权重最大？",
        options: ["键 1，即它自己", "键 3", "三个键一样大"],
        answer: 0,
        why: "它与自己的分数是第 1 行中最大的，而缩放和 softmax 都保持分数的顺序。广为流传的那一行 [0.387, 0.142, 0.471] 是错的。",
      },
      {
        q: "怎样让查询不去关注填充的键？",
        options: ["打分前把这些键向量置零", "打分后把它们的 logit 设为 −∞", "把分数除以真实键的个数"],
        answer: 1,
        why: "零向量照样得到分数 q · 0 = 0，而 e⁰ = 1 一点也不小。logit 为 −∞ 时，权重恰好为 0。",
      },
    ],
  },
};
