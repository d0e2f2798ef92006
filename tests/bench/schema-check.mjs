// schema-check.mjs — the subset of JSON Schema that native/bench/bench-json.schema.json uses
// (type, const, enum, required, properties, items, minimum, local $ref), so the test needs no
// validator package. Returns a list of problems, empty when valid.
const TYPES = {
  string: (x) => typeof x === 'string',
  number: (x) => typeof x === 'number' && Number.isFinite(x),
  integer: (x) => Number.isInteger(x),
  boolean: (x) => typeof x === 'boolean',
  array: Array.isArray,
  object: (x) => x !== null && typeof x === 'object' && !Array.isArray(x),
  null: (x) => x === null,
};

export function validate(value, schema, root, path = '$') {
  if (schema.$ref) {
    const target = schema.$ref.replace(/^#\//, '').split('/').reduce((o, k) => o[k], root);
    return validate(value, target, root, path);
  }
  const out = [];
  if ('const' in schema && value !== schema.const) out.push(`${path}: expected ${JSON.stringify(schema.const)}, got ${JSON.stringify(value)}`);
  if (schema.enum && !schema.enum.includes(value)) out.push(`${path}: ${JSON.stringify(value)} not in ${JSON.stringify(schema.enum)}`);
  if (schema.type) {
    const types = [].concat(schema.type);
    if (!types.some((t) => TYPES[t](value))) return [...out, `${path}: expected ${types.join(' or ')}, got ${JSON.stringify(value)}`];
  }
  if (typeof value === 'number' && 'minimum' in schema && value < schema.minimum) out.push(`${path}: ${value} < ${schema.minimum}`);
  if (TYPES.object(value)) {
    for (const k of schema.required ?? []) if (!(k in value)) out.push(`${path}: missing required field "${k}"`);
    for (const [k, sub] of Object.entries(schema.properties ?? {})) if (k in value) out.push(...validate(value[k], sub, root, `${path}.${k}`));
  }
  if (Array.isArray(value) && schema.items) value.forEach((x, i) => out.push(...validate(x, schema.items, root, `${path}[${i}]`)));
  return out;
}
