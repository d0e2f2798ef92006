/**
 * Registers <qk-scope> (side effect of importing this module). Tolerates double
 * definition: when the name is taken (the script included twice, or the npm module
 * and the self-contained script on one page) the existing definition is kept.
 * Pattern: github/relative-time-element's define module.
 */
import { defineQkScope } from './register';
import { QkScopeElement } from './qk-scope';

defineQkScope();

declare global {
  interface HTMLElementTagNameMap {
    'qk-scope': QkScopeElement;
  }
}

export { QkScopeElement, defineQkScope };
