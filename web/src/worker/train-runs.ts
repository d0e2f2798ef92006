/**
 * The training channel's side in the worker (protocol.ts, TrainOp): named trainers of the
 * core's training module (wasm/types/train.d.ts, docs/training.md) that live between
 * requests, so the page can train several scoring functions side by side, a chunk of steps
 * per request, and pause between chunks. No worker globals: the page runs the same class on
 * its own thread (with a frame-sized budget) where module workers are unavailable, and the
 * Node tests drive it with the real module.
 */
import type { CharModelWeights, QkScope, QkScopeTrain, Trainer } from '@qkscope/wasm';
import type { TrainEval, TrainOp, TrainProgress, TrainView } from './protocol';
import { CharModels } from './char-models';

export class TrainRuns {
  private readonly runs = new Map<string, Trainer>();
  private readonly chars = new CharModels();

  constructor(private readonly qk: QkScope, private readonly now: () => number) {}

  /** Runs one operation; bad options reject with the core's RangeError. */
  async run(op: TrainOp): Promise<unknown> {
    if (op.op === 'drop') {  // needs no module: dropping before the first run loads nothing
      if (op.run === undefined) for (const name of [...this.runs.keys()]) this.drop(name);
      else this.drop(op.run);
      return null;
    }
    const tr: QkScopeTrain = await this.qk.train();
    switch (op.op) {
      case 'tasks':
        return tr.tasks;
      case 'check':
        tr.createTrainer(op.options).delete();
        return null;
      case 'create': {
        const t = tr.createTrainer(op.options);  // throws before the old run is dropped
        this.drop(op.run);
        this.runs.set(op.run, t);
        return this.progress(t, new Float64Array(0), [this.evaluate(t)], 0, op.view);
      }
      case 'step':
        return this.step(this.get(op.run), op.steps, op.evalEvery, op.budgetMs, op.view, op.total);
      case 'charLoad':
        return this.chars.load(tr, op.key, op.weights as CharModelWeights);
      case 'charPredict':
        return this.chars.predict(op.key, op.text);
      case 'view':
        return this.progress(this.get(op.run), new Float64Array(0), [], 0, op.view);
      default:
        throw new RangeError(`train: unknown operation '${String((op as { op: unknown }).op)}' (known: tasks, check, create, step, view, drop, charLoad, charPredict)`);
    }
  }

  private get(run: string): Trainer {
    const t = this.runs.get(run);
    if (!t) throw new RangeError(`train: no run named '${run}' (create it first)`);
    return t;
  }

  private drop(run: string): void {
    this.runs.get(run)?.delete();
    this.runs.delete(run);
  }

  private evaluate(t: Trainer): TrainEval {
    const e = t.evaluate();
    return { step: t.state().steps, loss: e.loss, tokenAccuracy: e.tokenAccuracy, sequenceAccuracy: e.sequenceAccuracy };
  }

  /** One step at a time, so the budget is kept to within one step and evaluations land on multiples of evalEvery. */
  private step(t: Trainer, steps: number, evalEvery: number, budgetMs: number, view: TrainView, total?: number): TrainProgress {
    if (!Number.isInteger(steps) || steps < 1) throw new RangeError(`steps must be an integer >= 1, got ${steps}`);
    if (!Number.isInteger(evalEvery) || evalEvery < 1) throw new RangeError(`evalEvery must be an integer >= 1, got ${evalEvery}`);
    const losses: number[] = [];
    const evals: TrainEval[] = [];
    let stepMs = 0;
    for (let n = 0; n < steps && stepMs < budgetMs; n++) {
      const t0 = this.now();
      const l = t.step(1);
      stepMs += this.now() - t0;
      if (l.length === 0) break;  // diverged: state().message says why
      losses.push(l[0]!);
      const s = t.state();
      if (s.diverged) break;
      if (s.steps % evalEvery === 0 || s.steps === total) evals.push(this.evaluate(t));
    }
    return this.progress(t, Float64Array.from(losses), evals, stepMs, view);
  }

  private progress(t: Trainer, losses: Float64Array, evals: TrainEval[], stepMs: number, view: TrainView): TrainProgress {
    const s = t.state();
    const ex = t.example(view.example);  // a bad example throws the core's RangeError
    let attention: TrainProgress['attention'] = null;
    let attentionError = '';
    try {
      const a = t.attention(view.example, view.layer, view.head);
      attention = { rows: a.rows, cols: a.cols, data: a.data };
    } catch (e) {
      // Parameters grown past float32 (a run about to diverge) overflow the scores: no map, and why.
      attentionError = e instanceof Error ? e.message : String(e);
    }
    return { steps: s.steps, losses, evals, stepMs, diverged: s.diverged, message: s.message, attention, attentionError, tokens: ex.tokens, targets: ex.targets };
  }
}
