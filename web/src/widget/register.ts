/**
 * defineQkScope(): registers <qk-scope> under a name unless taken (no side effect on import;
 * define.ts calls it). See define.ts.
 */
import { QkScopeElement } from './qk-scope';

/** Defines the element under `name` unless that name is already defined; returns the class in use. */
export function defineQkScope(name = 'qk-scope', registry: CustomElementRegistry = globalThis.customElements): CustomElementConstructor | undefined {
  if (!registry) return undefined; // not a browser (SSR): nothing to define
  const existing = registry.get(name);
  if (existing) return existing;
  // One constructor may back only one name: other names get a subclass.
  registry.define(name, name === 'qk-scope' ? QkScopeElement : class extends QkScopeElement {});
  return registry.get(name);
}
