/**
 * Benchmark files -> points to plot. Accepts the two JSON schemas of docs/bench-json.md
 * (qkscope-peers from `npm run bench:peers`, qkscope-bench from `qkscope_bench --json`),
 * version 1; anything else is rejected with a message that says why.
 */

/** One benchmark file, checked and flattened. */
export interface Dataset {
  /** File name or URL it came from. */
  source: string;
  schema: 'qkscope-peers' | 'qkscope-bench';
  machine: { cpu: string; cores: number | null; loadStart: string; loadEnd: string; date: string | null };
  /** Versions and sample counts, one line (e.g. "PyTorch 1.13, ONNX Runtime 1.30, 3 rounds x 5 calls"). */
  setup: string;
  points: Point[];
}

/** One implementation on one configuration. */
export interface Point {
  impl: string;
  score: string;
  len: number;
  dim: number;
  heads: number;
  causal: boolean;
  ms: number;
  /** null where the file has no FLOP count (e.g. additive rows of the peers table). */
  gflops: number | null;
  label: string;
}

type Json = Record<string, unknown>;
const SUPPORTED_VERSION = 1;
/** bench:peers writes one row per case (8 today); far more is not a benchmark file to chart. */
const MAX_ROWS = 5000;

const num = (o: Json, k: string): number | null => (typeof o[k] === 'number' && Number.isFinite(o[k]) ? (o[k] as number) : null);
const str = (o: Json, k: string): string => (typeof o[k] === 'string' ? (o[k] as string) : '');

function need(o: Json, k: string, where: string): number {
  const v = num(o, k);
  if (v === null) throw new Error(`${where}: "${k}" is missing or not a number`);
  return v;
}

/** Shape of a peers row from its fields, or (older files) from its case label. */
function shapeOf(r: Json): { len: number; dim: number; heads: number; causal: boolean } {
  const label = str(r, 'case');
  const grab = (re: RegExp) => Number(re.exec(label)?.[1] ?? NaN);
  const len = num(r, 'len') ?? grab(/\bL=(\d+)/);
  const dim = num(r, 'dim') ?? grab(/\bd=(\d+)/);
  const heads = num(r, 'heads') ?? (grab(/\bH=(\d+)/) || 1);
  const causal = typeof r.causal === 'boolean' ? r.causal : /\bcausal\b/.test(label);
  return { len, dim, heads, causal };
}

function fromPeers(j: Json, source: string): Dataset {
  if (!Array.isArray(j.rows)) throw new Error(`${source}: "rows" is missing`);
  if (j.rows.length > MAX_ROWS) throw new Error(`${source}: ${j.rows.length} rows, more than this page draws (${MAX_ROWS})`);
  const points: Point[] = [];
  j.rows.forEach((raw, i) => {
    const where = `${source}: rows[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new Error(`${where}: expected an object, got ${JSON.stringify(raw)}`);
    const r = raw as Json;
    const shape = shapeOf(r);
    if (!(shape.len >= 1)) throw new Error(`${where}: no sequence length (len >= 1)`);
    if (!(shape.dim >= 1) || !(shape.heads >= 1)) throw new Error(`${where}: dim and heads must be >= 1`);
    const base = { score: str(r, 'score'), ...shape, label: str(r, 'case') };
    const add = (impl: string, msKey: string, gfKey: string) => {
      const ms = num(r, msKey);
      if (ms !== null && !(ms > 0)) throw new Error(`${where}: "${msKey}" must be a time > 0, got ${ms}`);
      if (ms !== null) points.push({ ...base, impl, ms, gflops: num(r, gfKey) });
    };
    need(r, 'qkscope_ms', where);
    add('qkscope (tiled)', 'qkscope_ms', 'qkscope_gflops');
    add('PyTorch (stock)', 'pytorch_ms', 'pytorch_gflops');
    add('PyTorch (tuned malloc)', 'pytorch_tuned_ms', 'pytorch_tuned_gflops');
    add('ONNX Runtime', 'ort_ms', 'ort_gflops');
  });
  const versions = [
    j.torch ? `PyTorch ${str(j, 'torch')}` : '',
    j.onnxruntime ? `ONNX Runtime ${str(j, 'onnxruntime')}` : '',
    `${num(j, 'rounds') ?? '?'} rounds x ${num(j, 'repeats') ?? '?'} calls per side, medians, one thread`,
  ].filter(Boolean);
  return { source, schema: 'qkscope-peers', machine: machineOf(j), setup: versions.join(', '), points };
}

function fromBench(j: Json, source: string): Dataset {
  const where = source;
  const heads = need(j, 'heads', where) * (num(j, 'batch') ?? 1);
  for (const k of ['heads', 'len', 'dim', 'tiled_ms'])
    if (!(need(j, k, where) > 0)) throw new Error(`${where}: "${k}" must be > 0, got ${j[k]}`);
  const p: Point = {
    impl: `qkscope_bench (${need(j, 'threads', where)} thread${j.threads === 1 ? '' : 's'})`,
    score: str(j, 'score'), len: need(j, 'len', where), dim: need(j, 'dim', where), heads,
    causal: j.causal === true, ms: need(j, 'tiled_ms', where), gflops: num(j, 'tiled_gflops'),
    label: `${str(j, 'score')} H=${heads} L=${j.len} d=${j.dim}${j.causal ? ' causal' : ''}${j.backward ? ' fwd+bwd' : ''}`,
  };
  const setup = `Eigen GEMM ${num(j, 'gemm_gflops')?.toFixed(1) ?? '?'} GFLOP/s in the same run, ${(j.tiled_samples_ms as unknown[] | undefined)?.length ?? '?'} samples`;
  return { source, schema: 'qkscope-bench', machine: machineOf(j), setup, points: [p] };
}

function machineOf(j: Json): Dataset['machine'] {
  return { cpu: str(j, 'cpu') || 'unknown CPU', cores: num(j, 'cores'), loadStart: str(j, 'load_start'), loadEnd: str(j, 'load_end'), date: str(j, 'date') || null };
}

/** Parses one file's text; throws an Error naming the file and the problem. */
export function parseDataset(text: string, source: string): Dataset {
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch (e) {
    throw new Error(`${source} is not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  if (!j || typeof j !== 'object' || Array.isArray(j)) throw new Error(`${source}: expected one JSON object`);
  const o = j as Json;
  const version = num(o, 'version');
  // Files from before the schema had a version have none; a present one must be a number.
  if (o.version !== undefined && version === null) throw new Error(`${source}: "version" must be a number, got ${JSON.stringify(o.version)}`);
  if (version !== null && version > SUPPORTED_VERSION)
    throw new Error(`${source}: schema version ${version} is newer than this page reads (${SUPPORTED_VERSION})`);
  if (o.schema === 'qkscope-peers' || (o.schema === undefined && Array.isArray(o.rows))) return fromPeers(o, source);
  if (o.schema === 'qkscope-bench') return fromBench(o, source);
  throw new Error(`${source}: not a qkscope benchmark file (schema ${JSON.stringify(o.schema ?? null)}; expected "qkscope-peers" or "qkscope-bench")`);
}

/** Series of one measure against L: one line per implementation (and per file, when several). */
export interface SeriesOut {
  id: string;
  label: string;
  points: { x: number; y: number; label: string }[];
}

/**
 * Scaled-dot points without a mask, grouped into lines. `measure`: GFLOP/s, or the time
 * per head in ms (files mix H = 1, 4 and 12, so whole-run times are not comparable).
 */
export function seriesOf(sets: Dataset[], measure: 'gflops' | 'ms'): SeriesOut[] {
  const out = new Map<string, SeriesOut>();
  for (const set of sets) {
    for (const p of set.points) {
      if (p.score !== 'scaled_dot' || p.causal) continue;
      const y = measure === 'gflops' ? p.gflops : p.ms / p.heads;
      if (y === null || !(y > 0)) continue;
      const name = sets.length > 1 ? `${p.impl} · ${set.source}` : p.impl;
      const s = out.get(name) ?? { id: name, label: name, points: [] };
      s.points.push({ x: p.len, y, label: p.label });
      out.set(name, s);
    }
  }
  // Several rows at one L (H = 1 and H = 4 at L = 2048): one point, their mean.
  for (const s of out.values()) {
    const byX = new Map<number, { x: number; ys: number[]; labels: string[] }>();
    for (const p of s.points) {
      const g = byX.get(p.x) ?? { x: p.x, ys: [], labels: [] };
      g.ys.push(p.y);
      g.labels.push(p.label);
      byX.set(p.x, g);
    }
    s.points = [...byX.values()]
      .sort((a, b) => a.x - b.x)
      .map((g) => ({ x: g.x, y: g.ys.reduce((a, b) => a + b, 0) / g.ys.length, label: g.labels.join('; ') }));
  }
  return [...out.values()];
}
