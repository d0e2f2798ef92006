/**
 * 第 8 章（超越平方复杂度：线性注意力与稀疏注意力）的简体中文文字。Terms follow
 * docs/facts.md §11. Facts: docs/facts.md §8.
 */
import type { Ch8Text } from './en';

const r = String.raw;

export const zh: Ch8Text = {
  id: 'ch8',
  kicker: '第 8 章',
  title: '超越平方复杂度：线性注意力与稀疏注意力',
  lede: 'softmax 注意力要把每个查询与每个键逐一比较。有两类方法可以避开这一点：核方法改变矩阵乘法的顺序，稀疏方法跳过大部分查询–键对。两者都用精确性换取速度，本章测量这笔交换的代价。',
  sections: [
    {
      id: 'c8-linear',
      title: '改变乘法的顺序',
      body: r`softmax 注意力计算 $\operatorname{softmax}(QK^\top/\sqrt{d})\,V$。中间那个 $L \times L$ 矩阵使它成为平方复杂度，而指数函数使我们无法绕开它：$e^{q \cdot k}$ 不能分解为只含 $q$ 的部分与只含 $k$ 的部分之积。

核方法把指数换成一个可以分解的相似度 $\operatorname{sim}(q, k) = \phi(q)^\top \phi(k)$，其中核函数映射 $\phi$ 的输出非负。于是由乘法结合律，

$$o_i = \frac{\sum_j \phi(q_i)^\top \phi(k_j)\, v_j^\top}{\sum_j \phi(q_i)^\top \phi(k_j)} = \frac{\phi(q_i)^\top \big(\sum_j \phi(k_j) v_j^\top\big)}{\phi(q_i)^\top \sum_j \phi(k_j)}, \qquad O = \frac{\phi(Q)\,\big(\phi(K)^\top V\big)}{\phi(Q)\,\big(\phi(K)^\top \mathbf{1}\big)}.$$

括号中的 $\phi(K)^\top V$ 是一个只需计算一次的 $m \times d$ 矩阵，因此开销是 $O(L\, m\, d)$ 而不是 $O(L^2 d)$，而且从不生成 $L \times L$ 矩阵。两种核函数映射：

- $\phi(x) = \operatorname{elu}(x) + 1$（Katharopoulos 等，2020）：计算便宜、输出为正，$m = d$。它定义的是一个**不同的**核，因此并不近似 softmax，而是取代了它。
- 正随机特征（Performer 的 FAVOR+，Choromanski 等，2021）：$\phi(x) = \frac{1}{\sqrt m}\exp\big(Wx - \lVert x\rVert^2/2\big)$，$W$ 中有 $m$ 个随机高斯方向。其期望满足 $\phi(q)^\top\phi(k) = e^{q \cdot k}$：这是核 $e^{q \cdot k}$ 的无偏估计，误差随 $m$ 增大而减小。要与 $\operatorname{softmax}(QK^\top/\sqrt d)$ 比较，先把 $q$ 和 $k$ 都乘以 $d^{-1/4}$，使估计的目标变为 $e^{q \cdot k/\sqrt d}$；本章的图正是这样做的。（归一化后的权重是两个这样的估计之比，只是近似无偏。）

对于因果（解码器）注意力，求和只对 $j \le i$ 进行。这是前缀和：维护 $S_i = S_{i-1} + \phi(k_i) v_i^\top$ 和 $z_i = z_{i-1} + \phi(k_i)$，再读出 $o_i = \phi(q_i)^\top S_i / \phi(q_i)^\top z_i$。这就是一个状态为 $m \times d$ 的循环神经网络，这也是那篇论文题为“Transformers are RNNs”的原因。`,
    },
    {
      id: 'c8-error',
      title: '与 softmax 有多接近？',
      body: r`第一张图在同一组带随机种子的输入上，用 qkscope 的 forward() 计算 softmax 注意力，用 qkscope 的 linearAttention() 计算两种核方法版本，并比较权重（序列较短，可以画出来）和输出。FAVOR+ 的误差大致按 $1/\sqrt m$ 下降；elu + 1 的误差是固定的，因为它是另一个核。输入更尖锐（输入尺度更大）时 softmax 更集中，两种近似都更难跟上。

要有心理准备：FAVOR+ 收敛得很慢。核的估计是无偏的，但它的相对方差大致按 $e^{\lVert q + k\rVert^2/\sqrt d}/m$ 增长，因此对于常见大小的输入，需要数百乃至数千个特征才能把**输出**的误差降到百分之几。Performer 通过正交随机方向、在训练中重新抽样以及让查询和键保持较小来缓解这一问题；本图使用的是普通的独立高斯方向，所以你看到的是最基本的估计器。`,
    },
    {
      id: 'c8-time',
      title: '换来了什么：时间随 L 的变化',
      body: r`第二张图随 $L$ 增大，为精确的 softmax 注意力和两种核方法版本计时，头宽 $d = 64$ 或 $128$。所有曲线都在 qkscope 核心中运行（WebAssembly）。精确 softmax 计时两次：一次通过 forward()，它还会为教学返回 $L \times L$ 的中间结果；一次通过 attention()，即从不构造这些矩阵的分块在线 softmax 内核（第 7 章）。在双对数坐标上，精确注意力的斜率为 2，核方法版本的斜率为 1；图下的总结给出交叉点，即从哪个测量到的 $L$ 起 elu + 1 一直比分块 softmax 快：与原生基准测试（npm run bench:linear）做的是同一个比较，只是在你的浏览器里测量。`,
    },
    {
      id: 'c8-sparse',
      title: '稀疏注意力：少打一些分',
      body: r`另一条出路保留 softmax，但限制哪些查询–键对参与计算。

- **top-k 选择**：先粗略地给每一对打分，每行只保留 $k$ 个最大的分数，并只在它们上面做 softmax。$k \ge L_k$ 时就是普通的 softmax。它节省了加权求和的工作量，但为了找出前 $k$ 个，仍然要给所有的对打分。
- **滑动窗口加全局词元**（Longformer，Beltagy 等，2020；BigBird，Zaheer 等，2020）：查询 $i$ 只看 $|i - j| \le w$ 的键 $j$，另有少数全局词元能看到所有位置、也被所有位置看到。BigBird 还给每个查询加上 $r$ 个随机的键（只抽一次，这里由随机种子决定），使任意两个词元之间都有一条短路径。模式是预先固定的，模式之外的对根本不打分：大约是 $L(2w + 1 + r) + 2gL$ 对，而不是 $L^2$ 对。

第三张图用 qkscope 的 forward() 计算这两种方式：top-k 使用 topk_softmax 归一化函数，窗口使用 qkscope 的 sparsePattern() 给出的掩码；并测量与完整 softmax 相比的误差以及保留下来的查询–键对比例。`,
    },
    {
      id: 'c8-check',
      title: "检验一下理解",
      body: "用两个问题检验一下阅读效果。选择一个答案，即可立刻看到对错和原因。",
    },
  ],
  fig1: {
    title: '图 8.1　线性注意力与 softmax 注意力对比',
    caption: r`elu + 1 的权重分布与 softmax 相似，但明显更平：它是另一个核，而不是近似。随着随机特征数 $m$ 增大，FAVOR+ 的权重越来越接近 softmax，误差曲线大致按 $1/\sqrt{m}$ 下降（有噪声：每个 $m$ 只抽取一次特征）。打开因果掩码：同样的前缀和技巧给出因果版本，并与核心中的因果 softmax 比较。`,
    map: '核函数映射',
    elu: 'elu + 1',
    favor: 'FAVOR+（随机特征）',
    m: '随机特征数 m',
    mHint: '仅用于 FAVOR+；elu + 1 始终是 m = d = 8。误差曲线一直画到 m = 4096。',
    sigma: '输入尺度',
    sigmaHint: '输入越大，softmax 越尖锐。',
    causal: '因果（前缀和）',
    softmaxTitle: 'softmax 权重（qkscope）',
    approxTitle: '线性注意力权重（{map}）',
    errorTitle: '输出相对 softmax 的误差',
    errorLabel: '相对输出误差随随机特征数 m 的变化',
    axisM: '随机特征数 m',
    axisErr: '相对输出误差',
    seriesFavor: 'FAVOR+',
    seriesElu: 'elu + 1',
    marker: 'm = {m}',
    summary: '相对 softmax 的输出误差：elu + 1 为 {elu}，FAVOR+（m = {m}）为 {favor}。',
  },
  fig2: {
    title: '图 8.2　精确注意力与线性注意力：时间随 L 的变化',
    caption: r`精确注意力按 $L^2$ 增长（本图中斜率为 2），核方法版本按 $L$ 增长（斜率为 1）。长度较短时核方法版本可能更慢，因为它每个词元的开销是 $m d$ 而不是 $L d$；交点随 $m$ 移动。计时来自你的设备，取若干次预热后运行的中位数。`,
    run: '运行',
    maxL: '最大 L',
    preview: '刚刚在本设备上快速测量到 L = {L}；按“运行”可测量到所选的最大 L。',
    notRun: '尚未测量：请按“运行”（最多几秒）。',
    running: '测量中… {done} / {total}',
    done: '完成：每个点取 {reps} 次预热后运行的中位数，在本设备上刚刚测得。',
    label: '时间（毫秒）随 L 的变化，双对数坐标',
    axisL: 'L',
    axisMs: '毫秒',
    core: 'softmax，qkscope',
    tiled: 'softmax，qkscope 分块（attention()）',
    elu: '线性，elu + 1，qkscope',
    favor: '线性，FAVOR+ m = 64，qkscope',
    dim: '头宽 d',
    summary: 'L = {L} 时：精确 softmax（分块）{exact} 毫秒，线性注意力 elu + 1 {lin} 毫秒。',
    cross: '从 L = {L} 起，线性注意力 elu + 1 比分块 softmax 快。',
    noCross: '到 L = {L} 为止，线性注意力 elu + 1 还没有比分块 softmax 快。',
  },
  fig3: {
    title: '图 8.3　top-k 与滑动窗口稀疏注意力，对比完整 softmax',
    caption: r`top-k 保留的是最大的权重，所以在这组输入上，无论保留比例多少，它的误差都比窗口低；但它仍要给每一对打分。窗口只给它保留的对打分，全局词元让信息能够跨越整个序列。两者在不丢弃任何对时（$k = L$ 或 $w = L - 1$）误差都为零。曲线画出每个 $k$ 和每个 $w$（使用当前的全局词元数）下误差与保留比例的关系；竖线标出当前设置。`,
    pattern: '稀疏模式',
    topk: 'top-k',
    window: '窗口 + 全局',
    k: 'k（每行保留的键数）',
    w: '窗口半宽 w',
    g: '全局词元数 g',
    r: '随机键数 r（BigBird）',
    rHint: '仅用于窗口模式：每行额外 r 个键，由随机种子抽取。',
    fullTitle: '完整 softmax 权重',
    sparseTitle: '稀疏权重',
    chartLabel: '相对输出误差随保留的查询–键对比例的变化',
    errTitle: '相对输出误差',
    axisFrac: '保留的查询–键对比例',
    axisErr: '相对输出误差',
    seriesTopk: 'top-k（k = 1…L）',
    seriesWindow: '窗口 + {g} 个全局词元 + {r} 个随机键（w = 0…L−1）',
    current: '当前',
    summary: '保留了 {kept} 的查询–键对，打分了 {scored}；相对输出误差 {err}，权重最大变化 {dw}。',
  },
  quiz: {
    correct: "正确。",
    wrong: "不对。",
    questions: [
      {
        q: "线性注意力计算 φ(Q)(φ(K)ᵀV)。它的计算量随序列长度 L 怎样增长？",
        options: ["线性：O(L d²)", "平方：O(L² d)", "立方"],
        answer: 0,
        why: "φ(K)ᵀV 是只需计算一次的 d × d_v 矩阵，因此从不构造 L × L 矩阵。",
      },
      {
        q: "BigBird 的稀疏模式由哪些部分组成？",
        options: ["只有滑动窗口", "窗口、全局词元和随机连接", "每个查询的 top-k 个键"],
        answer: 1,
        why: "Longformer 使用窗口加全局词元；BigBird 在此基础上加入了随机连接。",
      },
    ],
  },
};
