/**
 * 第 6 章（归一化函数）及其两幅图的简体中文文字。
 * Terms follow docs/facts.md §11（软注意力、硬注意力、稀疏注意力、top-k 选择、熵）; facts §6, §9.
 */
import { NORMALIZER_LABELS_ZH } from '../../i18n/labels-zh';
import type { Ch6Text } from './en';

const r = String.raw;

export const zh: Ch6Text = {
  id: 'ch6',
  kicker: '第 6 章',
  title: '归一化函数：软、硬、采样与稀疏',
  lede: 'softmax 只是把一行 logit 变成权重的一种方法。另外四种方法或用平滑性换取稀疏性、离散性，或引入随机采样；本章让它们在同样的几行数据上运行。',
  sections: [
    {
      id: 'c6-five',
      title: '归一化一行的五种方法',
      body: r`每种归一化函数都把一行 logit $z$ 和温度系数 $\tau > 0$（见第 4 章）映射为权重 $p$，满足 $p_j \ge 0$ 且 $\sum_j p_j = 1$。logit 只除以 $\tau$ 一次，即下面公式中写作 $z/\tau$ 的地方。

- **softmax**：$p_j = e^{z_j/\tau} / \sum_l e^{z_l/\tau}$。平滑可微；每个键都得到正的权重，无论多小。
- **硬注意力**：$p = \operatorname{onehot}(\arg\max_j z_j)$。全部权重给得分最高的键。它的梯度几乎处处为 0，无法仅靠反向传播训练，经典的解决办法是 REINFORCE 和下面的 Gumbel-softmax。**并列规则：**多个键同为最大值时，qkscope 选*下标最小*的那个。例子的第 3 行中，键 1 和键 2 都是 2.0，硬注意力把全部权重给键 1：$ {{hard3}}$。
- **Gumbel-softmax**（Jang 等，2017；Maddison 等，2017）先加上独立的 Gumbel 噪声 $g_j = -\log(-\log u_j)$，$u_j \sim U(0, 1)$，再做 softmax：$p_j \propto e^{(z_j + g_j)/\tau}$。每次抽样都是随机的（由种子固定）。它的**硬**变体在前向传播中取加噪 logit 的独热 argmax，在反向传播中使用软权重的梯度，即直通估计器（straight-through estimator）。
- **sparsemax**（Martins 和 Astudillo，2016）是 $z/\tau$ 在概率单纯形上的欧氏投影。它有一个阈值 $\theta$，使 $p_j = \max(z_j/\tau - \theta, 0)$，因此比最优键低得足够多的键权重*恰好*为 0，而且它仍然几乎处处可微。在 $\tau = 1$ 时，它对第 2 行 $[1.2, 1, 0.9, 0.3, -0.2, -1.5]$ 给出 $ {{sparse1}}$。
- **top-k softmax**：保留最大的 $k$ 个 logit，其余置为 $-\infty$，再做 softmax。$k = 1$ 时就是硬注意力；$k \ge L_k$ 时就是普通的 softmax。第 $k$ 名出现并列时，同样按最小下标处理。`,
    },
    {
      id: 'c6-compare',
      title: '并排比较',
      body: r`图 6.1 让五种方法在同样的三行上运行。柱状图比较其中一行的权重；下方的热力图每种方法一幅，显示所有行；表格给出所选行的熵 $H$、有效支撑集大小 $e^H$ 以及权重非零的键数。

可以试试：

- 减小 $\tau$：若一行只有一个最大值，softmax、sparsemax 和 top-k 都趋向硬注意力的独热行。第 3 行中键 1 和键 2 并列最大，它们则趋向在并列的键之间*平均分配*：$\tau = {{tieTau}}$ 时 softmax 给出 $ {{tie3}}$，而硬注意力按其并列规则把全部权重给键 1。增大 $\tau$：sparsemax 保留更多的键，softmax 分散到所有键上。
- 设 $k = 1$：top-k softmax 把全部权重放在一个键上，与硬注意力一致，第 3 行的并列也一样处理。
- 点击“重新采样”：只有 Gumbel-softmax 的权重发生变化。勾选“硬”可以看到独热的样本。`,
    },
    {
      id: 'c6-gumbel',
      title: 'Gumbel 样本服从 softmax 分布',
      body: r`为什么要加 Gumbel 噪声？这就是 Gumbel-max 技巧：加噪 logit 中最大者的下标，恰好是从 logit 的 softmax 分布中抽取的样本，

$$\Pr\Big[\arg\max_j (z_j + g_j) = i\Big] = \frac{e^{z_i}}{\sum_l e^{z_l}}.$$

除以 $\tau > 0$ 不会改变 argmax，所以在任何温度系数下，硬 Gumbel-softmax 选中键 $i$ 的概率都是 $\operatorname{softmax}(z)_i$；$\tau$ 只控制*软*样本有多接近独热。因此，带 Gumbel 噪声的硬注意力就是按 softmax 概率随机选择一个键，而 softmax 正是它的期望。

图 6.2 用计数来验证：它对所选行抽取许多硬样本（每个种子一个），比较每个键获胜的频率与 softmax 概率。`,
    },
    {
      id: 'c6-check',
      title: "检验一下理解",
      body: "用两个问题检验一下阅读效果。选择一个答案，即可立刻看到对错和原因。",
    },
  ],
  fig: {
    title: '图 6.1　同一组 logit 上的五种归一化函数',
    caption: r`softmax 从不给出精确的 0，sparsemax 和 top-k 会；硬注意力和 $k = 1$ 的 top-k 把并列的第 3 行全部给了下标最小的键 1；重新采样时只有 Gumbel-softmax 那一行会变。`,
    tau: '温度系数 τ',
    k: 'top-k：k',
    seed: 'Gumbel 种子',
    resample: '重新采样',
    hard: 'Gumbel：硬（直通）',
    row: '柱状图和表格所用的行',
    rowOption: '第 {i} 行',
    bars: '第 {i} 行在各归一化函数下的权重',
    key: '键',
    weight: '权重',
    logits: '第 {i} 行的 logit：{z}',
    colName: '归一化函数',
    colH: 'H（奈特）',
    colSupport: 'e^H',
    colNonzero: '非零个数',
    colMax: '最大权重',
    panel: '{name}：所有行',
    names: { ...NORMALIZER_LABELS_ZH },
  },
  fig2: {
    title: '图 6.2　硬 Gumbel-softmax 样本与 softmax 概率',
    caption: r`随着样本数增加，每个键获胜的比例趋近 $\operatorname{softmax}(z)$，与温度系数无关：$z + g$ 的 argmax 不依赖于 $\tau$。`,
    samples: '样本数（种子 1 … n）',
    row: '行',
    chart: '第 {i} 行：硬样本中各键的频率与 softmax 概率',
    freq: '样本频率',
    prob: 'softmax(z)',
    share: '比例',
    key: '键',
    gap: '|频率 − 概率| 的最大值：{gap}（{n} 个样本）',
  },
  quiz: {
    correct: "正确。",
    wrong: "不对。",
    questions: [
      {
        q: "哪个归一化函数会给一些可见的键恰好为 0 的权重，同时几乎处处可微？",
        options: ["softmax", "sparsemax", "硬注意力"],
        answer: 1,
        why: "sparsemax 是到单纯形上的欧氏投影：低于阈值的键权重恰好为 0。softmax 给每个可见的键正的权重；硬注意力没有有用的梯度。",
      },
      {
        q: "硬注意力通常怎样训练？",
        options: ["直接通过 argmax 反向传播", "用 REINFORCE，或用带直通估计器的 Gumbel-softmax", "无法训练"],
        answer: 1,
        why: "argmax 的独热向量几乎处处梯度为 0。直通变体在前向传播中使用独热向量，在反向传播中使用软梯度。",
      },
    ],
  },
};
