/**
 * 第 4 章（温度系数）及图 4.1 的简体中文文字。
 * Terms follow docs/facts.md §11（温度系数、熵、硬注意力……）; facts §2, §4.
 */
import type { Ch4Text } from './en';

const r = String.raw;

export const zh: Ch4Text = {
  id: 'ch4',
  kicker: '第 4 章',
  title: '温度系数',
  lede: '在 softmax 之前，每个 logit 都要除以同一个数。这个数决定注意力是分散到许多键上，还是集中到一个键上。本章用熵和有效支撑集大小来度量这一点，并说明两个极端情形分别变成什么。',
  sections: [
    {
      id: 'c4-what',
      title: r`$\tau$ 的作用`,
      body: r`分数经过缩放、加偏置和掩码之后，归一化函数把每一行 logit $z$ 变成权重。温度系数 $\tau > 0$ 先把这些 logit 除以 $\tau$：

$$p_j = \frac{e^{z_j/\tau}}{\sum_{l} e^{z_l/\tau}}.$$

除以 $\tau$ 会拉大或压缩 logit 之间的**差距**。两个键的 logit 相差 $\Delta$ 时，它们的权重之比为 $e^{\Delta/\tau}$：

- $\tau > 1$ 压缩差距：权重更**平坦**，更接近均匀分布。
- $\tau < 1$ 拉大差距：权重更**尖锐**，集中在得分最高的几个键上。
- $\tau = 1$ 保持 logit 不变；配合缩放点积分数，这就是 Transformer 的默认设置。

键的排序始终不变：得分最高的键在任何温度系数下都最高，变化的只是它比其他键多得多少权重。

本章通篇使用同一个例子，其中第 1 行的 logit 为 $[2, 1, 0.5, 0, -0.5, -1]$。当 $\tau = 1$ 时，它的权重为 $ {{w1}}$。`,
    },
    {
      id: 'c4-measure',
      title: '度量尖锐程度：熵、最大权重与有效支撑集大小',
      body: r`下面三个量概括了一行权重的集中程度。

- **熵** $H = -\sum_j p_j \log p_j$（单位为奈特）：独热行为 0，$L_k$ 个键上的均匀行为 $\log L_k$。
- **最大权重** $\max_j p_j$：介于 $1/L_k$ 和 1 之间。
- **有效支撑集大小** $e^{H}$ 把熵换算成键的个数：均匀分布在 $m$ 个键上的行有 $H = \log m$，于是 $e^H = m$。独热行为 1，均匀行为 $L_k$。

第 1 行在 $\tau = 1$ 时：$H = {{h1}}$ 奈特（六个键的最大值为 $\log 6 = {{log6}}$），最大权重为 $ {{m1}}$，有效支撑集大小约为 6 个键中的 $ {{s1}}$ 个。

熵是最常用的诊断量。熵接近 $\log L_k$ 的行几乎同时关注所有键（应检查分数的缩放）；熵接近 0 的行只关注一个键（可以尝试更大的 $\tau$ 使其变软）。`,
    },
    {
      id: 'c4-play',
      title: '动手试试',
      body: r`图 4.1 按滑块给出的温度系数，用核心实时计算这个例子。滑块按等比例移动，范围为 $\tau = 0.01$ 到 $\tau = 100$。读数对应所选的那一行；下方的曲线图扫描了整个 $\tau$ 范围，可以看到当前设置所处的位置。

可以试试：

- 把 $\tau$ 向右拖。每一行都趋于均匀的 $1/6 \approx 0.167$，熵曲线升向 $\log 6$ 处的虚线。
- 把 $\tau$ 向左拖。每一行都坍缩到自己最大的 logit 上。
- 在 $\tau = 1$ 时比较第 1 行和第 2 行。第 2 行的 logit 彼此接近，直到 $\tau$ 远小于 1 时它的权重才变得尖锐。`,
    },
    {
      id: 'c4-limit',
      title: r`两个极限：$\tau \to 0$ 就是硬性 argmax`,
      body: r`记一行中最大的 logit 为 $z_{(1)}$，它与第二名的差距为 $\Delta$。其他每个键相对于最大者的权重至多为 $e^{-\Delta/\tau}$，当 $\tau \to 0$ 时这个因子趋于 0。在极限下，softmax 变成 argmax 的独热向量，也就是第 6 章的**硬注意力**：

$$\lim_{\tau \to 0^+} \operatorname{softmax}(z/\tau) = \operatorname{onehot}\big(\arg\max_j z_j\big) \quad \text{（最大值唯一时）}.$$

当 $\tau = 0.01$ 时，核心算出的第 1 行 softmax 与其硬性独热行之差至多为 $ {{hardGap}}$。图 4.1 的读数给出了每种设置下的这一距离。第 2 行最大的两个 logit 只差 $0.1$，要达到同样的接近程度，所需的 $\tau$ 比第 1 行小得多。

如果两个键并列最大，小 $\tau$ 下的 softmax 会把权重平分给它们，而硬性 argmax 必须选出一个（qkscope 选下标最小的那个，见第 6 章）。

另一个极限 $\tau \to \infty$ 是均匀行 $1/L_k$：所有差距都缩小为 0。`,
    },
    {
      id: 'c4-relative',
      title: '权重是相对匹配强度，而不是置信度',
      body: r`softmax 只看 logit 之间的差：给整行加上同一个常数 $c$ 不会改变任何结果，因为 $e^{(z_j + c)/\tau} = e^{c/\tau}\, e^{z_j/\tau}$，这个因子会被约掉。$[4, 3, 2]$ 和 $[-4, -5, -6]$ 两行得到相同的权重 $ {{wa}}$ 与 $ {{wb}}$，尽管在第二行中每个键都与查询匹配得很差。

所以，权重表示的是某个键比同一行其他键匹配得好多少（以 $\tau$ 为单位），而不是查询在绝对意义上与任何键匹配得多好；它也不是该键为“正确”键的概率：即使没有一个键相关，权重之和仍然是 1。最大权重高只说明有一个键明显胜出，而且同样的 logit 在更小的 $\tau$ 下会得到更高的最大权重。`,
    },
  ],
  fig: {
    title: '图 4.1　温度系数、熵与有效支撑集大小',
    caption: r`随着 $\tau$ 减小，所选行的熵降向 0，最大权重升向 1，softmax 行与硬性独热行重合；随着 $\tau$ 增大，每一行都趋于均匀的 $1/6$，熵趋于 $\log 6$。键的排序始终不变。`,
    tau: '温度系数 τ',
    tauHint: '对数刻度：每移动一格，τ 乘以相同的倍数。',
    row: '行（查询）',
    rowOption: '第 {i} 行',
    weights: '权重 softmax(z / τ)',
    rowBars: '第 {i} 行：τ = {tau} 与 τ = 1 时的权重',
    atTau: 'τ = {tau}',
    atOne: 'τ = 1（参照）',
    keyAxis: '键',
    weightAxis: '权重',
    entropyChart: '各行的熵 H 随 τ 的变化',
    entropy: '熵 H（奈特）',
    rowSeries: '第 {i} 行',
    uniform: 'log 6（均匀）',
    readH: '熵 H',
    readMax: '最大权重',
    readSupport: '有效支撑集大小 e^H',
    readLog: '上限 log Lₖ = {max}',
    readKeys: '共 {n} 个键',
    readHard: '与硬性 argmax 的距离',
    readHardNote: 'max |p − onehot(键 {j})|',
    logits: '所选行的 logit z：{z}',
  },
};
