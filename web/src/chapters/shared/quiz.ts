/**
 * Checks for understanding: multiple-choice questions with instant feedback, no account and
 * nothing stored. Each question is a fieldset of radio buttons (arrow keys move between the
 * options, as for any radio group); choosing one says at once whether it is right, and why,
 * in a live region.
 *
 *   quiz('c10-quiz', t.quiz)   // { correct, wrong, questions: [{ q, options, answer, why }] }
 */
import { h, testId } from './dom';
import { inline } from './rich';
import './quiz.css';

export interface QuizText {
  correct: string;
  wrong: string;
  questions: readonly { q: string; options: readonly string[]; answer: number; why: string }[];
}

export function quiz(id: string, t: QuizText): HTMLElement {
  const box = testId(h('div', { className: 'quiz' }), id);
  t.questions.forEach((question, n) => {
    const name = `${id}-q${n}`;
    const legend = h('legend', {});
    legend.innerHTML = inline(question.q);
    const feedback = testId(h('p', { className: 'quiz-feedback' }), `${name}-feedback`);
    feedback.setAttribute('aria-live', 'polite');
    const options = question.options.map((text, k) => {
      const input = testId(h('input', { type: 'radio', name, id: `${name}-o${k}`, value: String(k) }), `${name}-o${k}`);
      const label = h('label', { htmlFor: input.id });
      label.innerHTML = inline(text);
      input.addEventListener('change', () => {
        const right = k === question.answer;
        feedback.className = `quiz-feedback ${right ? 'quiz-right' : 'quiz-wrong'}`;
        feedback.dataset.right = String(right);
        feedback.replaceChildren(h('strong', { textContent: right ? t.correct : t.wrong }), ' ');
        const why = h('span', {});
        why.innerHTML = inline(question.why);
        feedback.append(why);
      });
      return h('div', { className: 'quiz-option' }, input, label);
    });
    box.append(h('fieldset', { className: 'quiz-question' }, legend, ...options, feedback));
  });
  return box;
}
