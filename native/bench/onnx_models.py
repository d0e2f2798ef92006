#!/usr/bin/python3
"""The ONNX Runtime peer's models, generated (never committed) with onnx.helper (Debian python3-onnx).

Two graphs for scaled-dot attention, fp32, one batch, H heads, L_q = L_k = L, head size d:

  * "mha": one com.microsoft MultiHeadAttention node (ONNX Runtime's contrib operator; its CPU
    kernel is the MLAS path, flash-style tiling for long sequences). Inputs query, key, value of
    shape (1, L, H*d): head h is columns [h*d, (h+1)*d). Causal: the operator's `unidirectional`
    attribute.
  * "msm": MatMul -> Mul(scale) -> Softmax -> MatMul on (1, H, L, d) inputs, the graph every
    exporter writes for the pre-fusion Transformer (the fallback when the contrib operator is not
    available). Causal: an additive (L, L) bias of 0 / -inf added before Softmax.

Usage: native/bench/onnx_models.py KIND H L D CAUSAL OUT.onnx  (peers.py imports model_bytes()).
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MS_DOMAIN = "com.microsoft"


def _mha(heads, length, dim, causal):
    shape = [1, length, heads * dim]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("query", "key", "value")]
    out = helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)
    attrs = dict(num_heads=heads, scale=float(dim) ** -0.5)
    if causal:
        attrs["unidirectional"] = 1
    node = helper.make_node("MultiHeadAttention", ["query", "key", "value"], ["output"], domain=MS_DOMAIN, **attrs)
    graph = helper.make_graph([node], "qkscope_peer_mha", inputs, [out])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS_DOMAIN, 1)])


def _msm(heads, length, dim, causal):
    shape = [1, heads, length, dim]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("query", "key", "value")]
    out = helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)
    inits = [numpy_helper.from_array(np.array(float(dim) ** -0.5, dtype=np.float32), "scale")]
    nodes = [
        helper.make_node("Transpose", ["key"], ["key_t"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["query", "key_t"], ["s_raw"]),
        helper.make_node("Mul", ["s_raw", "scale"], ["s"]),
    ]
    logits = "s"
    if causal:
        bias = np.triu(np.full((length, length), -np.inf, dtype=np.float32), 1)
        inits.append(numpy_helper.from_array(bias, "causal_bias"))
        nodes.append(helper.make_node("Add", ["s", "causal_bias"], ["s_masked"]))
        logits = "s_masked"
    nodes += [helper.make_node("Softmax", [logits], ["p"], axis=-1), helper.make_node("MatMul", ["p", "value"], ["output"])]
    graph = helper.make_graph(nodes, "qkscope_peer_msm", inputs, [out], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def model_bytes(kind, heads, length, dim, causal):
    """Serialized model of `kind` ("mha" or "msm") for the given shape."""
    model = {"mha": _mha, "msm": _msm}[kind](heads, length, dim, causal)
    if kind == "msm":
        onnx.checker.check_model(model)  # contrib ops are unknown to onnx's own checker
    return model.SerializeToString()


if __name__ == "__main__":
    if len(sys.argv) != 7:
        sys.exit(__doc__.split("Usage: ")[1])
    kind, h, length, d, causal, path = sys.argv[1:]
    with open(path, "wb") as f:
        f.write(model_bytes(kind, int(h), int(length), int(d), causal == "1"))
