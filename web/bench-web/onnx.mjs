// web/bench-web/onnx.mjs — the benchmark's ONNX graphs, written as protobuf bytes at run time
// (no .onnx file in the repository, no onnx package): one head, L_q = L_k = L, head size d, fp32.
//   "mha": one com.microsoft MultiHeadAttention node (ONNX Runtime's fused contrib operator),
//          inputs query, key, value (1, L, d); causal: its `unidirectional` attribute.
//   "msm": Transpose -> MatMul -> Mul(1/sqrt(d)) [-> Add(causal bias 0 / -inf)] -> Softmax -> MatMul,
//          inputs (L, d): the graph exporters write for softmax(Q K^T / sqrt(d)) V.
// Field numbers: onnx/onnx.proto (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
// ValueInfoProto), IR version 8, opset 17.

/** Protobuf writer for the handful of wire types ONNX needs (varint, fixed32, length-delimited). */
class Writer {
  bytes = [];
  varint(v) {
    let n = BigInt.asUintN(64, BigInt(v));
    do {
      let b = Number(n & 0x7fn);
      n >>= 7n;
      if (n) b |= 0x80;
      this.bytes.push(b);
    } while (n);
    return this;
  }
  int(field, v) { return this.varint(field << 3).varint(v); }
  float(field, v) {
    this.varint((field << 3) | 5);
    this.bytes.push(...new Uint8Array(new Float32Array([v]).buffer));
    return this;
  }
  raw(field, data) {
    this.varint((field << 3) | 2).varint(data.length);
    for (const b of data) this.bytes.push(b);
    return this;
  }
  str(field, s) { return this.raw(field, new TextEncoder().encode(s)); }
  msg(field, build) { return this.raw(field, build(new Writer()).done()); }
  done() { return Uint8Array.from(this.bytes); }
}

const FLOAT = 1; // TensorProto.DataType and AttributeProto.AttributeType share the code 1 for float
const attrType = { f: 1, i: 2, ints: 7 };

function attribute(w, name, kind, v) {
  w.str(1, name).int(20, attrType[kind]);
  if (kind === 'f') w.float(2, v);
  else if (kind === 'i') w.int(3, v);
  else for (const x of v) w.int(8, x);
  return w;
}

function node(w, { op, inputs, outputs, domain, attrs = [] }) {
  for (const i of inputs) w.str(1, i);
  for (const o of outputs) w.str(2, o);
  w.str(4, op);
  for (const a of attrs) w.msg(5, (x) => attribute(x, ...a));
  if (domain) w.str(7, domain);
  return w;
}

function valueInfo(w, name, dims) {
  return w.str(1, name).msg(2, (t) => t.msg(1, (tt) => tt.int(1, FLOAT).msg(2, (s) => {
    for (const d of dims) s.msg(1, (dim) => dim.int(1, d));
    return s;
  })));
}

function tensor(w, name, dims, data) {
  for (const d of dims) w.int(1, d);
  return w.int(2, FLOAT).str(8, name).raw(9, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
}

/**
 * Serialized ONNX model of softmax(Q K^T / sqrt(d)) V for one head: `kind` "mha" or "msm" (above).
 * Returns { bytes, inputDims } (the dims each of query, key, value must have).
 */
export function attentionModel(kind, L, d, causal) {
  const scale = 1 / Math.sqrt(d);
  const nodes = [];
  const inits = [];
  let dims;
  if (kind === 'mha') {
    dims = [1, L, d];
    const attrs = [['num_heads', 'i', 1], ['scale', 'f', scale]];
    if (causal) attrs.push(['unidirectional', 'i', 1]);
    nodes.push({ op: 'MultiHeadAttention', domain: 'com.microsoft', inputs: ['query', 'key', 'value'], outputs: ['output'], attrs });
  } else if (kind === 'msm') {
    dims = [L, d];
    inits.push(['scale', [], new Float32Array([scale])]);
    nodes.push(
      { op: 'Transpose', inputs: ['key'], outputs: ['key_t'], attrs: [['perm', 'ints', [1, 0]]] },
      { op: 'MatMul', inputs: ['query', 'key_t'], outputs: ['s_raw'] },
      { op: 'Mul', inputs: ['s_raw', 'scale'], outputs: ['s'] },
    );
    let logits = 's';
    if (causal) {
      const bias = new Float32Array(L * L);
      for (let i = 0; i < L; i++) for (let j = i + 1; j < L; j++) bias[i * L + j] = -Infinity;
      inits.push(['causal_bias', [L, L], bias]);
      nodes.push({ op: 'Add', inputs: ['s', 'causal_bias'], outputs: ['s_masked'] });
      logits = 's_masked';
    }
    nodes.push(
      { op: 'Softmax', inputs: [logits], outputs: ['p'], attrs: [['axis', 'i', -1]] },
      { op: 'MatMul', inputs: ['p', 'value'], outputs: ['output'] },
    );
  } else throw new RangeError(`kind must be "mha" or "msm", got ${JSON.stringify(kind)}`);
  const graph = (g) => {
    for (const n of nodes) g.msg(1, (w) => node(w, n));
    g.str(2, `qkscope_bench_${kind}`);
    for (const [name, tdims, data] of inits) g.msg(5, (w) => tensor(w, name, tdims, data));
    for (const name of ['query', 'key', 'value']) g.msg(11, (w) => valueInfo(w, name, dims));
    return g.msg(12, (w) => valueInfo(w, 'output', dims));
  };
  const model = new Writer().int(1, 8).str(2, 'qkscope-bench-web').msg(7, graph)
    .msg(8, (w) => w.str(1, '').int(2, 17));
  if (kind === 'mha') model.msg(8, (w) => w.str(1, 'com.microsoft').int(2, 1));
  return { bytes: model.done(), inputDims: dims };
}
