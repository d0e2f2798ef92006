/**
 * English text of chapter 11 ("Train it yourself"): an ablation of scoring functions on the
 * generated tasks of the core's trainer (docs/training.md), run in the reader's browser, and
 * the shipped next-character models over the reader's own sentence.
 * Facts: docs/facts.md §11b (and §2, §3 for linear concat and the sqrt(d_k) scale).
 */
import type { ChapterText } from '../types';

const r = String.raw;

export const en = {
  id: 'ch11',
  kicker: 'Chapter 11',
  title: 'Train it yourself',
  lede: 'The earlier chapters compared scoring functions on fixed inputs. Here you train a tiny attention model once per scoring function, side by side, and watch which ones learn a task and which cannot.',
  sections: [
    {
      id: 'c11-why',
      title: 'Why an ablation',
      body: r`An **ablation** changes one part of a model and keeps everything else fixed, so that any difference in what the model learns can be blamed on that part. Papers report them because a scoring function that looks reasonable on paper can still be unable to express what a task needs, and the only convincing evidence is a run where it was given every chance and failed.

Every run in the figure below is the same model: token and position embeddings, one or more residual self-attention layers with $W_Q$, $W_K$, $W_V$, $W_O$, and a linear read-out, with no feed-forward block and no layer norm, so everything it learns has to pass through the attention under study (an attention-only transformer; the model is described in docs/training.md). With the same seed every run starts from the same embeddings and projections, sees the same batches in the same order and is scored on the same held-out sequences. Only the scoring function $f(q, k)$ differs. The training loop is the C++ core compiled to WebAssembly; it runs in a Web Worker, so the page stays responsive, and the held-out loss and accuracy are measured every few steps.`,
    },
    {
      id: 'c11-expect',
      title: 'What to expect',
      body: r`Three generated tasks come with the trainer. Each sequence holds its inputs first and its answers after them, and the loss counts the answer positions only.

- **Reversal.** $n$ digits, then $n$ blanks; blank $k$ must output digit $n + 1 - k$. A model that solves it attends from answer position $n + k$ to input position $n + 1 - k$: in the attention map the answer rows form an **anti-diagonal** over the input block. The position embeddings are what make this possible, and every scoring function that compares query and key can learn it, though not always at the same learning rate: with length 8 and the default 0.02, bilinear (which also learns its own $d_k \times d_k$ matrix) stalls near 78 % token accuracy, and at 0.005 it learns reversal within 60 steps.
- **Associative recall** (Ba et al. 2016; Arora et al. 2024). Pairs (key, value), then query keys; each query must output the value stored with its key. The weight must land on the matching pair, so which key wins has to depend on the query.
- **Copy.** The same layout as reversal, answered in order: a shifted diagonal.

**Linear concat cannot retrieve.** Its score is $w^\top [q; k] = w_q^\top q + w_k^\top k$. The term $w_q^\top q$ is the same for every key of a row, and softmax ignores a constant added to a row, so every query gets the same weights: the ranking of the keys cannot depend on the query (chapter 2; Brody et al. 2022 call this *static* attention and show it for GAT). On recall no amount of training fixes this: expect its held-out accuracy to stay far below the others. The same argument says it cannot reverse either, since each answer row needs a different key. Additive attention (Bahdanau et al. 2015) puts a $\tanh$ between the two terms, which is exactly what lets the ranking change with the query.

**Unscaled dot products saturate.** With unit-variance components, $q \cdot k$ has variance $d_k$ (Vaswani et al. 2017, §3.2.1), so the logits of plain dot start large, the softmax is nearly one-hot from the first step and its gradient $\operatorname{diag}(p) - p p^\top$ is small (chapter 3). Expect dot to start slower than scaled dot at the same learning rate; the gap grows with the width $d_k$.

What a small run shows is evidence, not proof: a different seed, learning rate or a few hundred more steps can change the order of the functions that *can* learn a task. A function that cannot express the task fails under every setting.`,
    },
    {
      id: 'c11-run',
      title: 'Run the ablation',
      body: r`The defaults train scaled dot, linear concat and additive attention on associative recall (sequence length 6, width 16, one layer, one head, batches of 32, AdamW at learning rate 0.02, 400 steps). Press **Train**; the three curves grow together. Pause to look at an attention map, resume, or clear the runs and change a setting. Then try reversal with length 8: scaled dot and dot reach 95 % token accuracy within a few dozen steps and draw the anti-diagonal, while linear concat stalls.

The table gives, per function, the first evaluated step at which held-out token accuracy reached 95 % ("–" if it never did), the last held-out loss and accuracy, and the mean time of one optimizer step in your browser. Steps to 95 % is only as fine as the evaluation interval (about 40 evaluations per run). A run whose loss or gradient stops being a finite number is stopped by the core and marked as diverged, with the step and the reason, and its curve ends at its last good evaluation: try bilinear on reversal at the absurd learning rate 1e8, where the scores overflow at the second step.`,
    },
    {
      id: 'c11-text',
      title: 'Attention over real text',
      body: r`The generated tasks have one right attention pattern each. Real text has many. The models of the figure below were trained on Ambrose Bierce's *The Devil's Dictionary* (1911, public domain) to predict the next character: one model per scoring function, the same architecture as above with two layers of two heads, a causal mask and a context of 32 characters, trained once with the same seed and settings (docs/training.md, "Shipped models"). Their weights ship with this page; the core runs them in the page's worker.

Type a sentence. The model reads its last 32 characters (lower-cased; characters it does not know become "#"). For the chosen position, each strip shows how much weight one head of one layer gives to every character read so far, and the list shows the model's most likely next characters after it.

A model this small has learned spelling, not meaning: on the held-out tenth of the book the seven models guess the next character right 32 % to 38 % of the time, against 17 % for always guessing the space. Their heads look mostly at the last few characters. That is also why linear concat is not far behind here, although it failed recall: with the causal mask, ranking the keys by position alone ("newest first") is a ranking that does not depend on the query, and it is a useful one for spelling.`,
    },
    {
      id: 'c11-check',
      title: 'Check your understanding',
      body: r`Two questions about what the runs show.`,
    },
  ],
  quiz: {
    correct: 'Right.',
    wrong: 'Not quite.',
    questions: [
      {
        q: 'On associative recall, linear concat stays near chance however long it trains. Why?',
        options: [
          'Its learning rate is too small',
          r`Its score $w_q^\top q + w_k^\top k$ ranks the keys the same way for every query`,
          'It has too few parameters to store the pairs',
        ],
        answer: 1,
        why: 'The query term is a constant of the row and cancels in the softmax, so no query can pick its own pair. Training more cannot add the missing dependence.',
      },
      {
        q: 'Two runs differ only in the scoring function. What must be the same for the comparison to be fair?',
        options: [
          'Only the number of steps',
          'The seed (initial parameters, batches, held-out set) and every other setting',
          'The final loss',
        ],
        answer: 1,
        why: 'An ablation changes one thing. With the same seed both runs start from the same weights and see the same data, so a difference in what they learn comes from the scoring function.',
      },
    ],
  },
  loading: 'Loading the training module…',
  loadFailed: 'The training module could not be loaded: {message}',
  text: {
    title: 'Figure 11.2. What a next-character model attends to',
    caption: r`Slide the position along the sentence: nearly every head puts its largest weight on the current character or one of the two before it, so at this size the models have learned spelling. After “th” every model's first guess is “e”. Linear concat's heads point at the newest characters for every query: its ranking of the keys is the same for every query, and “the newest visible key” is such a ranking under the causal mask.`,
    input: 'Your sentence',
    defaultText: 'Attention, n. The art of looking at everything except what matters.',
    score: 'Scoring function of the model',
    query: 'Position (query)',
    lastAt: 'last character, {pos} (“{ch}”)',
    at: '{pos} (“{ch}”)',
    reads: 'The model reads “{text}” ({n} of at most {context} characters).',
    empty: 'Nothing to read yet: type a few characters.',
    stripsTitle: 'Attention from the chosen position, per layer and head',
    headTitle: 'Layer {layer}, head {head}',
    stripLabel: 'Layer {layer}, head {head}: from position {pos} (“{ch}”), the largest weight {w} is on “{top}”',
    topTitle: 'Most likely next characters after position {pos} (“{ch}”)',
    topTitleWaiting: 'Most likely next characters',
    other: 'other (#)',
    fetchFailed: 'The weights file {name} could not be loaded (HTTP {status}).',
    failed: 'Cannot show this model: {message}',
  },
  fig: {
    title: 'Figure 11.1. Training one model per scoring function',
    caption: r`On recall, linear concat's accuracy stays low while scaled dot and additive climb: its weights cannot depend on the query, and without the causal mask its attention map repeats one row for every query. On reversal, the maps of the functions that learn turn into an anti-diagonal over the input positions.`,
    task: 'Task',
    tasks: { reverse: 'Reversal', recall: 'Associative recall', copy: 'Copy' } as Record<string, string>,
    scores: 'Scoring functions',
    scoresHint: 'Each checked function trains its own copy of the model.',
    normalizer: 'Normalizer',
    normalizerNames: {} as Record<string, string>,
    causal: 'Causal mask',
    length: 'Length L',
    layers: 'Layers',
    heads: 'Heads',
    steps: 'Steps',
    stepsHint: 'Optimizer steps per run, 1 to {max}.',
    stepsError: 'Steps must be a whole number from 1 to {max}, got {got}.',
    lr: 'Learning rate',
    lrHint: 'AdamW step size, a finite number > 0 (checked by the core), here from 1e-6 to 1e9.',
    lrRange: 'This page trains with learning rates from {min} to {max}, got {got}.',
    train: 'Train',
    pause: 'Pause',
    resume: 'Resume',
    clear: 'Clear runs',
    idle: 'Not trained yet: press Train.',
    starting: 'Creating the models…',
    running: 'Training: {pct} % ({steps})',
    paused: 'Paused at {pct} % ({steps}).',
    done: 'Done ({steps}).',
    failed: 'Stopped.',
    noMap: 'No map at this step: {message}',
    cleared: 'Runs cleared.',
    settingsChanged: 'Settings changed: the runs were cleared. Press Train to start again.',
    progressRun: '{name} {steps}/{total}',
    runError: 'Could not train: {message}',
    divergedLabel: '{name} (diverged)',
    lossTitle: 'Held-out loss',
    accTitle: 'Held-out token accuracy',
    lossLabel: 'Held-out loss against training steps, one line per scoring function',
    accLabel: 'Held-out token accuracy against training steps, one line per scoring function',
    axisStep: 'step',
    axisLoss: 'loss (nats)',
    axisAcc: 'token accuracy',
    viewControls: 'Attention map shown',
    mapsTitle: 'Attention of a held-out example',
    mapsHint: 'Row i: answer or input position i as a query; column j: the key position it attends to. The maps update as the models learn.',
    example: 'Held-out example (0 to {max})',
    layer: 'Layer',
    head: 'Head',
    mapLabel: 'Attention weights of {name} after {steps} steps',
    tokens: 'Tokens: {tokens} · targets: {targets} (after {steps} steps)',
    divergedNote: 'Diverged: {message}',
    notFinite: 'the held-out loss is not a finite number',
    resultsTitle: 'Results',
    resultsHint: 'Steps to 95 %: the first evaluation with held-out token accuracy ≥ 0.95. Time per step is measured where the model trains (your browser, one thread).',
    colScore: 'Scoring function',
    colTo95: 'Steps to 95 %',
    colLoss: 'Final loss',
    colAcc: 'Held-out accuracy',
    colMs: 'ms per step',
    colState: 'State',
    stateDone: 'done',
    stateSteps: '{steps} of {total} steps',
    stateDiverged: 'diverged: {message}',
  },
} satisfies ChapterText & Record<string, unknown>;

export type Ch11Text = typeof en;
