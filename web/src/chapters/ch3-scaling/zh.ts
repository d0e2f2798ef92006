/**
 * 第 3 章（为什么要除以 √d_k）及其两幅图的简体中文文字。
 * Terms follow docs/facts.md §11（缩放点积注意力、梯度消失、熵……）; facts §3.
 */
import type { Ch3Text } from './en';

const r = String.raw;

export const zh: Ch3Text = {
  id: 'ch3',
  kicker: '第 3 章',
  title: r`为什么要除以 $\sqrt{d_k}$`,
  lede: 'Transformer 会把每个点积分数除以键维度的平方根。本章用实时计算说明原因：原始分数的离散程度如何随维度增长，以及这种增长对 softmax 及其梯度意味着什么。',
  sections: [
    {
      id: 'c3-variance',
      title: r`$q \cdot k$ 的方差随 $d_k$ 增长`,
      body: r`假设查询 $q$ 和键 $k$ 的各个分量相互独立，均值为 0、方差为 1，这大致就是网络在初始化时的情形。于是每个乘积 $q_i k_i$ 的均值为 0，方差为 $\mathbb{E}[q_i^2]\,\mathbb{E}[k_i^2] = 1$；点积把 $d_k$ 个这样相互独立的项加在一起：

$$\operatorname{Var}(q \cdot k) = \sum_{i=1}^{d_k} \operatorname{Var}(q_i k_i) = d_k, \qquad \operatorname{std}(q \cdot k) = \sqrt{d_k}.$$

当 $d_k = 512$ 时，原始分数的标准差约为 $ {{std512}}$。除以 $\sqrt{d_k}$ 之后，无论维度多大，方差都回到 1：

$$\operatorname{Var}\!\left(\frac{q \cdot k}{\sqrt{d_k}}\right) = \frac{d_k}{d_k} = 1.$$

图 3.1 不是直接断言这一点，而是实际验证：它随机生成分量服从标准正态分布的 $q$ 和 $k$，用驱动本页其他部分的同一个 WebAssembly 核心为它们打分，并估计 $d_k = 16, 64, 256, 512$ 时的方差。计算在你眼前进行，估计值会稳定在 $d_k$ 和 1 附近，误差在百分之几以内。`,
    },
    {
      id: 'c3-not-d',
      title: r`为什么是 $\sqrt{d_k}$ 而不是 $d_k$`,
      body: r`除以 $d_k$ 看起来同样自然，但会矫枉过正：方差变成 $d_k / d_k^2 = 1/d_k$。在 $d_k = 512$ 时，分数的标准差只有约 $0.044$，同一行中的各个 logit 几乎相等，无论键的内容如何，softmax 给出的权重都接近均匀。图 3.1 表格的最后一列展示了这种按 $1/d_k$ 的缩小。

平方根是唯一能让方差在任何维度下都保持为 1 的选择。1 本身并没有什么特别；关键是 logit 的离散程度不随 $d_k$ 变化，这样模型变宽时注意力的尖锐程度不会随之改变。调节尖锐程度另有一个独立、显式的旋钮：*温度系数*（第 4 章）。`,
    },
    {
      id: 'c3-saturation',
      title: '过大的 logit 使 softmax 饱和，梯度随之消失',
      body: r`离散程度为什么重要？softmax 把 logit 之差变成权重之比：两个键的 logit 相差 $\Delta$，它们的权重之比就是 $e^{\Delta}$。只有两个键时，若 $\Delta = 1$，较大的权重为 $p = {{pSmall}}$；若 $\Delta = {{gapBig}}$，即 $d_k = 512$ 时未缩放分数的一个标准差，则 $p = {{pBig}}$：softmax 已经变成了硬性的 argmax。

这同时也关掉了学习。权重对 logit 的导数是 softmax 的雅可比矩阵

$$\frac{\partial p_j}{\partial z_l} = p_j(\delta_{jl} - p_l), \qquad J = \operatorname{diag}(p) - p\,p^\top.$$

当 $p$ 是独热向量时，$J$ 的每个元素都为 0，因此传到权重上的梯度在反传回分数、进而传回 $W_Q$ 和 $W_K$ 的途中，会被乘上（几乎为）零，这就是梯度消失。只有两个键时，$J$ 唯一非平凡的元素是 $p(1-p)$：$\Delta = 1$ 时为 $ {{jSmall}}$，$\Delta = {{gapBig}}$ 时为 $ {{jBig}}$。

图 3.2 在随机的查询和键上，针对不同的 $d_k$ 测量这两种效应：每行最大权重的平均值，以及每行 $J$ 的 Frobenius 范数的平均值，$\lVert J\rVert_F^2 = \sum_j p_j^2 - 2\sum_j p_j^3 + \big(\sum_j p_j^2\big)^2$。不缩放时，随着 $d_k$ 增大，最大权重逼近 1，雅可比范数趋于 0。按 $1/\sqrt{d_k}$ 缩放时，两者都保持在小 $d_k$ 时的水平。除以 $d_k$ 时，两者都趋向均匀分布的极限：权重为 $1/L_k$，雅可比范数为 $\sqrt{1/L_k - 1/L_k^2}$。`,
    },
    {
      id: 'c3-summary',
      title: '缩放能做什么，不能做什么',
      body: r`- 它让 logit 在任何维度下保持同一尺度，前提是各分量独立且方差为 1，这在初始化时大致成立。训练过程中 $q$ 和 $k$ 是学出来的，统计特性会变化；缩放确定的是起点，而不是整个训练过程。
- 它不改变哪个键胜出：把一行除以一个正数不会改变分数的排序。它改变的是胜出的程度，以及能反传回去多少梯度。
- 它针对点积，也适用于双线性分数：当 $W$ 接近单位矩阵时，$q^\top W k$ 接近 $q \cdot k$，对单位方差的分量其方差约为 $d$，所以未缩放的双线性 logit 同样随宽度增长。qkscope 对双线性的默认缩放系数为 $ {{bilScale}}$（不做除法，与 Luong 等人一致）；$d$ 较大时，请把缩放系数设为 $1/\sqrt{d_k}$，或让 $W$ 保持较小。余弦相似度本来就限制在 $[-1, 1]$ 内；加性注意力的分数要经过 $\tanh$，其输出有界，再由 $v$ 加权。
- 在本核心中，缩放系数是流水线中的一个独立参数（缩放点积注意力默认取 $1/\sqrt{d_k}$），在掩码和温度系数之前施加。`,
    },
    {
      id: 'c3-check',
      title: "检验一下理解",
      body: "用两个问题检验一下阅读效果。选择一个答案，即可立刻看到对错和原因。",
    },
  ],
  fig1: {
    title: '图 3.1　q·k 的方差与 dₖ 的关系：在你的浏览器中做蒙特卡洛模拟',
    caption: r`未缩放的方差随 $d_k$ 增长（对应的虚线在双对数坐标下斜率为 1）。除以 $\sqrt{d_k}$ 后保持为 1；除以 $d_k$ 后按 $1/d_k$ 下降。估计值来自随机的标准正态 $q$ 和 $k$，由核心打分，每次调用 $32 \times 32$ 对；样本越多，波动越小。换一个种子会抽取新的向量。`,
    samples: '每个 dₖ 的样本对数',
    resample: '换一个种子',
    colD: 'dₖ',
    colRaw: 'Var(q·k)',
    colStd: 'std(q·k)',
    colScaled: 'Var(q·k / √dₖ)',
    colByD: 'Var(q·k / dₖ)',
    tableCaption: '各键维度下原始分数、缩放后分数与除以 d 后分数的方差的蒙特卡洛估计',
    chartLabel: '分数方差与键维度的关系（双对数坐标）',
    axisD: '键维度 dₖ',
    axisVar: '方差',
    seriesRaw: 'q·k',
    seriesScaled: 'q·k / √dₖ',
    seriesByD: 'q·k / dₖ',
    theoryD: '理论值 dₖ',
    theory1: '理论值 1',
    theoryByD: '理论值 1/dₖ',
    running: '计算中……每个维度已完成 {pairs} 对（每次调用 {batch} 对）。',
    done: '完成：每个维度 {pairs} 对。',
  },
  fig2: {
    title: '图 3.2　softmax 饱和程度与 dₖ 的关系',
    caption: r`不缩放时，随着 $d_k$ 增大，每行的最大权重逼近 1，雅可比范数趋于 0：softmax 变成硬性的 argmax，几乎传不回梯度。按 $1/\sqrt{d_k}$ 缩放时，两条曲线都很平。除以 $d_k$ 时，它们趋向均匀分布的极限（虚线），此时无论键的内容如何，每个键都得到 $1/L_k$。每个点是 64 个查询行的平均值。`,
    lk: '每行的键数 Lₖ',
    lkHint: '键越多，均匀极限越低，趋向独热也越慢',
    maxTitle: '每行最大权重的平均值',
    jacTitle: 'softmax 雅可比范数的平均值',
    maxLabel: '三种缩放方式下，softmax 最大权重的平均值与键维度的关系',
    jacLabel: '三种缩放方式下，softmax 雅可比矩阵 Frobenius 范数的平均值与键维度的关系',
    axisD: '键维度 dₖ',
    axisMax: '最大权重',
    axisJac: '雅可比范数',
    seriesRaw: 'q·k（未缩放）',
    seriesScaled: 'q·k / √dₖ',
    seriesByD: 'q·k / dₖ',
    uniform: '均匀（Lₖ = {lk}）',
    summary: '在 dₖ = {d} 时：未缩放，最大权重平均为 {rawMax}，雅可比范数为 {rawJac}；按 1/√dₖ 缩放，分别为 {sqrtMax} 和 {sqrtJac}；除以 dₖ，最大权重为 {dMax}，接近均匀值（{uniform}）。',
  },
  quiz: {
    correct: "正确。",
    wrong: "不对。",
    questions: [
      {
        q: "q 和 k 各有 $d_k$ = 256 个相互独立、均值为 0、方差为 1 的分量。q · k 的方差是多少？",
        options: ["1", "16", "256"],
        answer: 2,
        why: "每个乘积 $q_i$ $k_i$ 的方差为 1，共有 $d_k$ 个，所以方差为 256，标准差为 16。除以 $\\sqrt{d_k}$ = 16 后方差回到 1。",
      },
      {
        q: "为什么除以 $\\sqrt{d_k}$，而不是除以 $d_k$？",
        options: ["除以 $d_k$ 会让方差变成 1/$d_k$，把 softmax 推向均匀分布", "除以 $d_k$ 会溢出", "两者没有区别"],
        answer: 0,
        why: "除以 $\\sqrt{d_k}$ 恰好让方差回到 1；除以 $d_k$ 则矫枉过正，宽度大的头的权重会变得几乎一样。",
      },
    ],
  },
};
