/**
 * Chapter 11, "Train it yourself": an ablation of scoring functions. One tiny attention-only
 * model per chosen function (the core's trainer, docs/training.md) is trained side by side on
 * a generated task from the core's task registry, in the page's Web Worker; live held-out
 * curves, attention maps and a results table (Figure 11.1); then the shipped next-character
 * models trained on "The Devil's Dictionary", one per scoring function, over the reader's own
 * sentence (Figure 11.2). Facts: docs/facts.md §11b.
 * State in the URL under "c11.".
 */
import { defineChapter } from '../types';
import { quiz } from '../shared/quiz';
import { h, testId } from '../shared/dom';
import { fill } from '../../i18n';
import type { TaskInfo } from '@qkscope/wasm';
import { makeSpec, normalize } from './model';
import { trainBackend } from './runner';
import { trainFigure } from './figure-train';
import { textFigure } from './figure-text';
import { en, type Ch11Text } from './en';
import { zh } from './zh';
import './style.css';

export default defineChapter<Ch11Text>({
  id: 'ch11',
  ns: 'c11',
  text: { en, zh },
  render(ctx, view) {
    view.section('c11-check').append(quiz('c11-quiz', ctx.t.quiz));
    const slot = view.section('c11-run');
    const waiting = testId(h('p', { className: 'hint', textContent: ctx.t.loading }), 'c11-loading');
    slot.append(waiting);
    const backend = trainBackend(ctx.qk);
    view.section('c11-text').append(textFigure(ctx, backend));
    // Runs of an earlier build of this page (before a language switch or a visit to another
    // chapter) are dropped: their loop stops at its next request, their memory is freed.
    void backend.train({ op: 'drop' }).catch(() => undefined);
    // The training module (and with it the task registry) loads once the figure comes near
    // the viewport: a reader who only reads the prose never downloads it.
    ctx.whenVisible(waiting, () => {
      void backend.train<readonly TaskInfo[]>({ op: 'tasks' }).then((all) => {
        if (!waiting.isConnected) return;  // the page was rebuilt meanwhile (language switch)
        // The ablation offers the generated tasks: one that trains on a text needs a corpus,
        // which this figure has none of (Figure 11.2 shows the shipped text models instead).
        const tasks = all.filter((x) => !x.readsText);
        const store = ctx.state(makeSpec(tasks.map((x) => x.name), ctx.qk.scoreFunctions.map((f) => f.name), ctx.qk.normalizers.map((n) => n.name)), normalize);
        waiting.replaceWith(trainFigure(ctx, store, tasks, backend));
      }, (e: unknown) => {
        waiting.textContent = fill(ctx.t.loadFailed, { message: e instanceof Error ? e.message : String(e) });
      });
    });
  },
});
