/**
 * npm entry of the <qk-scope> widget: the element class, its types and the shared
 * core loader, without side effects. `import 'qkscope/widget/define'` registers it.
 */
export { QkScopeElement, type AttentionChangeDetail, type AttentionChangeEvent } from './qk-scope';
export { defineQkScope } from './register';
export { loadCore } from './core';
export { parseConfig, ATTRIBUTES, type WidgetConfig, type MaskKind, type ViewKind, type ControlName, type ConfigProblem } from './config';
