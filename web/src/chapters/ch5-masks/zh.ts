/**
 * 第 5 章（掩码与偏置）及其五幅图的简体中文文字。
 * Terms follow docs/facts.md §11（填充掩码、因果掩码、混合精度……）; facts §2, §5, §10.
 */
import type { Ch5Text } from './en';

const r = String.raw;

export const zh: Ch5Text = {
  id: 'ch5',
  kicker: '第 5 章',
  title: '掩码与偏置',
  lede: '在 softmax 之前，还可以修改分数：偏置给其中一些分数加上一个数，掩码则把另一些分数彻底去掉。本章实时构造常见的掩码和偏置，并展示掩码写得不小心时在数值上会出什么问题。',
  sections: [
    {
      id: 'c5-order',
      title: '掩码与偏置在哪里起作用',
      body: r`qkscope 按固定顺序施加这些修改。对查询 $i$ 和键 $j$：

$$z_{ij} = \underbrace{c \tanh\!\big(\sigma f(q_i, k_j) / c\big)}_{\text{缩放并软截断后的分数}} + \underbrace{B_{ij}}_{\text{偏置}}, \qquad \text{当 } M_{ij} = \text{false 时 } z_{ij} \leftarrow -\infty,$$

然后归一化函数把 $z$ 的每一行变成权重。**偏置** $B$ 把分数平移一个有限的量：键仍然可见，只是吸引力变大或变小。**掩码** $M$（true 表示允许关注，与 PyTorch SDPA 的约定一致）则把键去掉：它的 logit 变为 $-\infty$，权重恰好为 0。多个掩码按“与”组合：只有每个掩码都允许时，键才可见。

掩码作用于分数，而不是输入。把键向量置零并不能把它藏起来：零向量键的分数仍为 0，仍会分到权重（见第 1 章）。`,
    },
    {
      id: 'c5-structure',
      title: '填充掩码、因果掩码与滑动窗口',
      body: r`实践中的大多数情形由三种掩码覆盖。

- **键填充掩码。** 一个批次中的序列长度不同，会被填充到最长的长度。若有效键为 $n$ 个，则对每个查询都屏蔽 $j > n$ 的键。
- **因果掩码。** 在解码器中，查询 $i$ 不能看到后面的词元：保留 $j \le i$。
- **滑动窗口。** 每个查询只看附近的键：保留 $-w_\ell \le j - i \le w_r$（Longformer、Mistral）。因果窗口取 $w_r = 0$。

当查询少于键（$L_q < L_k$）时，“$j \le i$”是有歧义的：哪个键与查询 $i$ 对齐？有两种约定：

$$\text{左上对齐：} j \le i, \qquad \text{右下对齐：} j \le i + (L_k - L_q).$$

左上对齐让第一个查询对齐第一个键。右下对齐让*最后一个*查询对齐*最后一个*键，这正是使用 KV 缓存解码时所需要的：$L_q$ 个新词元排在 $L_k - L_q$ 个已缓存词元之后，所以最后一个查询必须能看到所有键。FlashAttention 在 2.1 版中从左上对齐改为右下对齐，因此按一种约定编写的代码在另一种约定下会悄悄改变含义。滑动窗口也沿同一条对角线。

图 5.1 把两种对齐并排画出。当 $L_q = L_k$ 时两者一致；设 $L_q = 2$、$L_k = 4$，则最后一个查询在左上对齐下看到 2 个键，在右下对齐下看到全部 4 个键。

当查询*多于*键（$L_q > L_k$）时，偏移量 $L_k - L_q$ 为负，右下对齐会让前 $L_q - L_k$ 个查询一个键也看不到，即使没有任何填充：这些行整行被屏蔽（见最后一节）。由核心对因果掩码、$L_q = {{brLq}}$、$L_k = {{brLk}}$ 计算，没有可见键的行——右下对齐：{{brEmpty}}；左上对齐：{{tlEmpty}}。在左上对齐下，查询 $i$ 总能看到键 1，只有当所有键都被填充、或窗口排除了键 1 时，整行才会被屏蔽。在图 5.1 中设 $L_q = {{brLq}}$、$L_k = {{brLk}}$ 即可看到。`,
    },
    {
      id: 'c5-alibi',
      title: 'ALiBi：每个头一个距离惩罚',
      body: r`ALiBi（Press、Smith 和 Lewis，2022）用一个随距离增长的偏置代替位置编码：

$$B_{ij} = -m_h\,\lvert j - i \rvert,$$

其中头 $h$ 有固定的斜率 $m_h$，不需要学习。斜率大的头只看附近的词元，斜率小的头可以看得很远。当头数 $H$ 为 2 的幂时，斜率构成等比数列：

$$m_h = 2^{-8h/H}, \qquad h = 1, \dots, H.$$

$H = 8$ 时斜率为 $\tfrac12, \tfrac14, \dots, \tfrac1{256}$。当 $H$ 不是 2 的幂时，原作者的构造先取不超过 $H$ 的最大 2 的幂 $2^{\lfloor \log_2 H \rfloor}$ 对应的斜率，再从两倍头数的构造中每隔一个取一个斜率补足剩下的头：即 $p = 2^{\lfloor \log_2 H \rfloor}$ 时 $2^{-4/p}$ 的奇数次幂，在对数刻度上位于第一组相邻斜率的正中间（其中第一个比第一组最大的斜率还大）。$H = 12$ 时的斜率列表为

$$ {{slopes12}}$$



图 5.2 中的查询都是零向量，因此所有原始分数都是 0，权重完全由偏置决定：这就是所选头的“近因”分布。`,
    },
    {
      id: 'c5-t5',
      title: 'T5：按桶划分的相对位置',
      body: r`T5（Raffel 等，2020）为相对位置 $r = j - i$ 的每个*桶*在每个头上学习一个标量，并把它加到分数上：$s_{ij} \leftarrow s_{ij} + b_h[\operatorname{bucket}(r)]$。相邻的偏移各占一个桶；更远的偏移共用一个桶，桶的宽度按几何级数增长；超过最大距离的偏移全部共用最后一个桶。每个方向有 $n$ 个桶时，前 $n/2$ 个距离是精确的，其余按对数间隔：

$$\operatorname{bucket}(\lvert r\rvert) = \tfrac n2 + \Big\lfloor \frac{\log(\lvert r\rvert / \tfrac n2)}{\log(\text{max distance} / \tfrac n2)}\,\big(n - \tfrac n2\big) \Big\rfloor \quad\text{当 } \lvert r\rvert \ge \tfrac n2,$$

并截断到 $n - 1$。编码器（双向）把桶分给查询之前和之后的键；解码器（因果）把桶全部用于过去。T5 本身使用 32 个桶，最大距离为 128。

在 qkscope 中，偏移从与 ALiBi、因果掩码和滑动窗口相同的对角线量起：$r = j - (i + o)$，左上对齐时 $o = 0$，右下对齐时 $o = L_k - L_q$，因此用 KV 缓存解码的查询位于它真实的位置。图 5.3 给出 $L_q = 4$ 个查询、$L_k = 8$ 个键时每一对的桶；表 $b_h$ 是可学习的，qkscope 会返回它的梯度。`,
    },
    {
      id: 'c5-graph',
      title: '把图的邻接关系当作掩码',
      body: r`图注意力网络（GAT，Veličković 等，2018）让每个节点只关注它的邻居。这就是一个掩码：当 $i$ 与 $j$ 之间有边时 $M_{ij}$ 为 true，通常还加上自环 $M_{ii}$，让节点保留自身的特征。等价地，也可以写成在边上为 0、其余位置为 $-\infty$ 的偏置。

在图 5.4 中勾选边来构造图。每个节点那一行的权重只分布在它的邻居上。节点 5 一开始是孤立的：有自环时它以权重 1 关注自己；关掉自环，它的那一行就没有任何可见的键。`,
    },
    {
      id: 'c5-softcap',
      title: '对 logit 做软截断',
      body: r`非常大的 logit 会让 softmax 变成独热向量，梯度消失（见第 3 章）。Gemma 2 不做硬截断，而是平滑地限制它们：

$$s \leftarrow c \tanh(s / c).$$

当 $\lvert s \rvert \ll c$ 时它几乎是恒等映射；大的分数被压向 $\pm c$，因此截断后任何分数的绝对值都不会超过 $c$，大 logit 之间的差距也随之缩小。Gemma 2 对注意力 logit 取 $c = 50$。qkscope 在缩放之后、偏置和掩码之前施加软截断。图 5.5 画出由核心计算的截断曲线，以及它对一行大 logit 的影响。`,
    },
    {
      id: 'c5-empty',
      title: '整行被屏蔽与填充值',
      body: r`掩码可能让某个查询一个可见的键都没有：批次中的填充查询、孤立的节点、没有覆盖任何键的窗口。对这样的行，softmax 是 $0/0$：

$$p_j = \frac{e^{-\infty}}{\sum_l e^{-\infty}} = \frac{0}{0} = \text{NaN}.$$

NaN 会经过加权求和传到输出，训练时还会传到每一个梯度。qkscope 的策略是明确的：整行被屏蔽时，权重为 0、输出为 0、$\log\sum\exp = -\infty$，绝不产生 NaN。

许多实现为了避开 $-\infty$，用一个很大的负常数（$-10^4$ 或 $-10^9$）填充被屏蔽的分数。这样虽然躲开了 NaN，却带来另外一些陷阱，而且与数据类型有关：

- $-10^9$ 超出了 float16 的范围（最大绝对值 65504），会被存成 $-\infty$，NaN 又回来了。PyTorch 的 masked_fill 在 float16 下会以溢出错误拒绝这个值。
- 在 bfloat16 中，同一个常数被舍入为 $ {{bf16}}$：仍是有限值，所以没有 NaN。
- 用 masked_fill 写入（即*替换*被屏蔽的分数）的有限填充值，$-10^4$ 或该类型的最小值 torch.finfo(dtype).min，不会产生 NaN，但整行被屏蔽时会变成在被屏蔽键上的*均匀*分布：查询悄无声息地关注了填充位置。
- 同一个 finfo.min 若用作*加性*掩码，即在 float16 中计算“分数 $+$ finfo(float16).min”，就不安全了：分数不大于 $-16$ 时，和达到 $-65520$ 或更小，被舍入为 $-\infty$（$-65520$ 恰在中点，按偶数舍入为 $-65536$，超出范围），整行被屏蔽时又得到 NaN。由核心在 float16 中实时计算：被屏蔽的一行 $ {{addScores}}$ 加上 $-65504$ 后存为 $ {{addLogits}}$，其 softmax 为 $ {{addWeights}}$。换成较温和的分数 $ {{mildScores}}$，和会舍入回 $-65504$，该行变为均匀分布：$ {{mildWeights}}$。
- 绝对值不够大的填充值（例如 $-10^4$）可能比本身就非常负的真实分数还要大。

安全的做法就是 qkscope 采用的做法：即使输入是 float16 或 bfloat16，也用 float32 计算分数和 softmax（混合精度），在取指数前减去行最大值，用 $-\infty$ 做掩码，并显式处理空行。图 5.6 在每种数据类型、每个填充值下运行这种不小心的写法，并与安全的写法并排比较。`,
    },
    {
      id: 'c5-check',
      title: "检验一下理解",
      body: "用两个问题检验一下阅读效果。选择一个答案，即可立刻看到对错和原因。",
    },
  ],
  figMask: {
    title: '图 5.1　填充掩码、因果掩码与滑动窗口：左上对齐与右下对齐',
    caption: r`当 $L_q < L_k$ 时，右下对齐的对角线向右平移 $L_k - L_q$，最后一个查询能看到所有有效键；左上对齐下它只能看到前 $L_q$ 个。带斜线的单元格被屏蔽，权重恰好为 0。`,
    lq: '查询数 L_q',
    lk: '键数 L_k',
    pad: '填充键数（位于末尾）',
    causal: '因果掩码',
    window: '滑动窗口',
    left: '窗口左宽 w_ℓ',
    right: '窗口右宽 w_r',
    topLeft: '左上对齐',
    bottomRight: '右下对齐',
    visible: '每个查询可见的键数：{counts}',
    empty: '没有可见键的行：{rows}（权重为 0，绝不为 NaN）',
    none: '无',
  },
  figAlibi: {
    title: '图 5.2　ALiBi 斜率与单个头的偏置',
    caption: r`头数 $H$ 为 2 的幂时，每个斜率是前一个的 $2^{-8/H}$ 倍（$H = 8$ 时逐头减半）；斜率越陡，权重越集中在最近的键上；斜率平缓时，权重在可见的历史上几乎均匀。`,
    heads: '头数 H',
    head: '头 h',
    slopeList: '斜率 m₁ … m_H（点击选择一个头）',
    slopes: '斜率 m₁ … m_H（已选头 {h}）',
    headN: '头 {h}',
    slope: '头 {h} 的斜率：m = {m}',
    bias: '偏置 −m |j − i|（由核心计算）',
    weights: '权重（因果，零查询）',
    construction: '构造方式：{how}',
    power: 'H 是 2 的幂：mₕ = 2^(−8h/H)',
    interleaved: 'H 不是 2 的幂：先取 {p} 个斜率 2^(−8h/{p})，再从 {q} 个头的构造中每隔一个取一个',
  },
  figT5: {
    title: '图 5.3　T5 相对位置的桶',
    caption: r`靠近对角线时每个偏移都有自己的桶；越远，一个桶覆盖的范围越大，超过最大距离的偏移全部共用最后一个桶。切换到右下对齐：桶跟着对角线走，最后一个查询自己的位置是最后一个键上的桶 0。因果模式下，查询之后的键共用桶 0（反正会被因果掩码屏蔽）。`,
    chart: '每个（查询，键）对的桶（由核心计算）',
    legend: '桶',
    buckets: '桶数',
    distance: '最大距离',
    direction: '方向',
    bi: '双向（编码器）',
    causal: '因果（解码器）',
    alignment: '对齐方式',
    topLeft: '左上',
    bottomRight: '右下',
    summary: '每个桶覆盖的过去距离：{ranges}。',
  },
  figGraph: {
    title: '图 5.4　把图当作注意力掩码',
    caption: r`每一行的权重只分布在该节点的邻居上（带斜线的单元格表示没有边）；没有自环的孤立节点对应空行：权重为 0，而不是 NaN。`,
    edges: '边',
    edge: '边 {a}–{b}',
    self: '自环',
    graph: '图',
    weights: '使用邻接掩码的权重',
  },
  figCap: {
    title: '图 5.5　logit 软截断 c·tanh(s/c)',
    caption: r`截断曲线在 0 附近与恒等映射重合，并向 $\pm c$ 变平；截断之后，一行大 logit 的权重不再那么偏向一边，因为大 logit 之间的差距缩小了。`,
    cap: '截断值 c',
    curve: '截断后的分数与原始分数',
    raw: '原始分数 s',
    capped: '截断后的分数',
    identity: '恒等（不截断）',
    capSeries: 'c·tanh(s/c)',
    weights: 'logit {z} 的权重',
    without: '不截断',
    with: '截断 c = {c}',
    key: '键',
    weight: '权重',
  },
  figPrec: {
    title: '图 5.6　整行被屏蔽、填充值与数据类型',
    caption: r`填充值为 $-\infty$（或 float16 下的 $-10^9$，它会变成 $-\infty$）时，整行被屏蔽的第 2 行变成 NaN；填充值有限时，它悄悄变成均匀分布；qkscope 的策略（最后一幅）在每种数据类型下都给出 0。`,
    dtype: '存储数据类型',
    fill: '填充值',
    fill1e4: '−1e4',
    fill1e9: '−1e9',
    fillInf: '−∞',
    fillMin: 'finfo.min',
    naive: '在 {dtype} 中 masked_fill 并做 softmax',
    correct: 'qkscope：float32 softmax，掩码为 −∞，空行为 0',
    scores: '分数（斜线：被屏蔽）',
    stored: '填充值的实际存储值',
    nan: 'NaN 单元格数',
    raises: 'PyTorch masked_fill',
    raisesYes: '报错（溢出）',
    raisesNo: '接受',
    row2: '第 2 行（整行被屏蔽）',
    row2Nan: 'NaN',
    row2Uniform: '在被屏蔽键上均匀分布',
    row2Zero: '全为 0',
    summary: '发生了什么：',
    summaryLine: '在 {dtype} 中 masked_fill 并做 softmax：填充值 {fill} 存为 {stored}{raises}；填充后的分数中有 {inf} 个 inf；{nan}。',
    summaryRaises: '（PyTorch 会报溢出错误）',
    summaryNan: '第 {rows} 行为 NaN（{n} 个单元格）',
    summaryNoNan: '没有 NaN',
    nanCell: 'NaN',
  },
  quiz: {
    correct: "正确。",
    wrong: "不对。",
    questions: [
      {
        q: "$L_q$ = 6 个查询，$L_k$ = 4 个键，因果掩码右下对齐，没有填充。有几个查询看不到任何键？",
        options: ["没有", "2 个", "4 个"],
        answer: 1,
        why: "右下对齐保留 j ≤ i + ($L_k$ − $L_q$) = i − 2，所以前两个查询看不到任何键，需要按空行的规则处理。",
      },
      {
        q: "在 fp16 中，把 finfo(fp16).min 作为掩码加到分数上。整行都被屏蔽的一行可能会怎样？",
        options: ["总是得到均匀的权重", "和被舍入为 −∞，这一行变成 NaN", "不会有事：有限的填充值总是安全的"],
        answer: 1,
        why: "在 fp16 中，−65504 加上 −16 或更小的分数会舍入为 −∞。有限的填充值只有在替换分数（masked_fill）时才安全，加到分数上则不然。",
      },
    ],
  },
};
