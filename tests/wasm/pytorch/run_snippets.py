# Runs the tutorial's PyTorch snippets (web/src/chapters/ch10-code/code/*.py) on the inputs
# that tests/wasm/pytorch-snippets.test.mjs took from the core, and prints what they compute
# as JSON on stdout; the Node test compares it with the core's numbers. Each numeric result
# is computed in float64 (the reference) and float32 (naive), for the project's tolerance
# rule. Non-finite numbers travel as the strings "inf", "-inf", "nan".
import json
import math
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "web", "src", "chapters", "ch10-code", "code"))

import masks  # noqa: E402
import mixed_precision  # noqa: E402
import normalizers  # noqa: E402
import polarity  # noqa: E402
import scores  # noqa: E402


def decode(x):
    if isinstance(x, list):
        return [decode(v) for v in x]
    if isinstance(x, str):
        return float(x)
    return x


def encode(t):
    if isinstance(t, torch.Tensor):
        t = t.tolist()
    if isinstance(t, list):
        return [encode(v) for v in t]
    if isinstance(t, bool):
        return t
    if isinstance(t, float) and not math.isfinite(t):
        return "nan" if math.isnan(t) else ("inf" if t > 0 else "-inf")
    return t


def both(fn):
    """fn(dtype) -> tensor, in float64 and float32."""
    return {"ref": encode(fn(torch.float64)), "naive": encode(fn(torch.float32))}


def tensor(x, dtype):
    return torch.tensor(decode(x), dtype=dtype)


def run_scores(case):
    name, p = case["score"], case["params"]

    def f(dt):
        Q, K = tensor(case["query"], dt), tensor(case["key"], dt)
        if name == "bilinear":
            return scores.bilinear(Q, K, tensor(p["W"], dt))
        if name == "additive":
            return scores.additive(Q, K, tensor(p["W_q"], dt), tensor(p["W_k"], dt), tensor(p["v"], dt), tensor(p["b"], dt))
        if name == "linear_concat":
            return scores.linear_concat(Q, K, tensor(p["w"], dt))
        return getattr(scores, name)(Q, K)
    return both(f)


def run_mask(case):
    keep = torch.ones(case["L_q"], case["L_k"], dtype=torch.bool)
    align = case.get("alignment", "top_left")
    if case.get("causal"):
        keep &= masks.causal(case["L_q"], case["L_k"], align)
    if "window" in case:
        keep &= masks.sliding_window(case["L_q"], case["L_k"], case["window"][0], case["window"][1], align)
    if "keyLength" in case:
        keep &= masks.key_padding(torch.tensor([case["keyLength"]]), case["L_k"])[0]
    z = torch.tensor(decode(case["scores"]), dtype=torch.float64)
    return {"keep": encode(keep), "masked": encode(masks.apply_mask(z, keep))}


def run_normalizer(case):
    name, tau = case["normalizer"], case["temperature"]

    def f(dt):
        z = tensor(case["z"], dt)
        if name == "softmax":
            return normalizers.softmax(z, tau)
        if name == "hard":
            return normalizers.hard(z)
        if name == "sparsemax":
            return normalizers.sparsemax(z, tau)
        if name == "topk_softmax":
            return normalizers.topk_softmax(z, case["topK"], tau)
        raise ValueError(name)
    return both(f)


def run_polarity(case):
    lengths = torch.tensor(case["lengths"])
    L_k, X = case["L_k"], tensor(case["x"], torch.float64)  # X: (B, L, d), self-attention
    keep = torch.arange(L_k) < lengths.unsqueeze(-1)         # (B, L_k), True = real key
    B, L, d = X.shape
    mha = torch.nn.MultiheadAttention(d, 1, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.eye(d, dtype=torch.float64).repeat(3, 1))
        mha.out_proj.weight.copy_(torch.eye(d, dtype=torch.float64))
    _, w_mha = mha(X, X, X, key_padding_mask=polarity.mha_key_padding_mask(keep))
    # SDPA's mask, applied as SDPA does (True = may attend); on PyTorch >= 2.0 also run SDPA itself.
    sdpa_keep = polarity.sdpa_attn_mask(keep)                # (B, 1, 1, L_k)
    z = masks.apply_mask((X @ X.transpose(-2, -1) / math.sqrt(d)).unsqueeze(1), sdpa_keep)
    w_sdpa = normalizers.softmax(z)[:, 0]
    out = {"mha": encode(w_mha), "sdpa": encode(w_sdpa), "ran_sdpa": False}
    F = torch.nn.functional
    if hasattr(F, "scaled_dot_product_attention"):
        o = F.scaled_dot_product_attention(X.unsqueeze(1), X.unsqueeze(1), X.unsqueeze(1), attn_mask=sdpa_keep)
        out["sdpa_output"] = encode(o[:, 0])
        out["ran_sdpa"] = True
    hf = polarity.hf_attention_mask(keep)
    out["hf"] = encode(hf)
    mod = polarity.flex_mask_mod(lengths)
    out["flex"] = [encode(mod(b, 0, torch.arange(L).unsqueeze(-1), torch.arange(L_k)).expand(L, L_k)) for b in range(B)]
    return out


def run_mixed(case):
    keep = torch.tensor(case["keep"], dtype=torch.bool)
    Q, K, V = (tensor(case[n], torch.float16) for n in ("query", "key", "value"))
    o, w = mixed_precision.attention_fp32_scores(Q, K, V, keep)
    naive = mixed_precision.naive_softmax(tensor(case["overflow"], torch.float32))
    return {"output": encode(o.float()), "weights": encode(w), "naive": encode(naive),
            "stable": encode(normalizers.softmax(tensor(case["overflow"], torch.float32)))}


def main():
    cases = json.load(open(sys.argv[1]))
    result = {
        "torch": torch.__version__,
        "scores": [run_scores(c) for c in cases["scores"]],
        "masks": [run_mask(c) for c in cases["masks"]],
        "normalizers": [run_normalizer(c) for c in cases["normalizers"]],
        "polarity": run_polarity(cases["polarity"]),
        "mixed": run_mixed(cases["mixed"]),
    }
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
