"""The ONNX Runtime side of peers.py: model generation, the Node worker, validation.

OrtPeer(root) starts `node native/bench/ort_peer.mjs` (onnxruntime-node from node_modules);
`available` is False, with `why`, when node, onnxruntime-node or python3-onnx is missing.
prepare(case, dump) generates the case's model (MultiHeadAttention, falling back to the
MatMul-Softmax-MatMul graph when this ONNX Runtime rejects it), runs it once on qkscope_bench's
head-0 inputs and validates head 0 (see check()); time(case, k) returns k timings in ms.
"""
import json
import os
import shutil
import subprocess

import numpy as np


def _softmax_attention(q, k, v, causal):
    s = (q @ k.T) * (q.shape[1] ** -0.5)
    if causal:
        s = s + np.triu(np.full(s.shape, -np.inf, dtype=s.dtype), 1)
    s = s - s.max(axis=1, keepdims=True)
    p = np.exp(s)
    return (p / p.sum(axis=1, keepdims=True)) @ v


def check(out, qk_out, q, k, v, causal):
    """The test suite's tolerance rule: max|out - ref64| <= tol = 2 max|naive32 - ref64| + 1e-6 (1 + max|ref64|),
    and agreement with qkscope's output (which met the same rule): max|out - qkscope| <= 2 tol.

    ref64: float64 softmax attention; naive32: the same in float32.
    """
    ref = _softmax_attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64), causal)
    naive = _softmax_attention(q, k, v, causal)
    naive_err = float(np.abs(naive - ref).max())
    tol = 2 * naive_err + 1e-6 * (1 + float(np.abs(ref).max()))
    err = float(np.abs(out - ref).max())
    vs_qkscope = float(np.abs(out - qk_out).max())
    return dict(ok=err <= tol and vs_qkscope <= 2 * tol, max_abs=err, tol=tol, naive_err=naive_err,
                vs_qkscope=vs_qkscope)


class OrtPeer:
    def __init__(self, root):
        self.root, self.proc, self.why, self.version = root, None, None, None
        self.dir = os.path.join(root, "build", "bench", "onnx")
        node = shutil.which("node")
        if not node:
            self.why = "node is not on PATH"
        elif not os.path.isdir(os.path.join(root, "node_modules", "onnxruntime-node")):
            self.why = "node_modules/onnxruntime-node is missing (run npm ci)"
        else:
            try:
                from onnx_models import model_bytes  # noqa: F401  (needs python3-onnx)
            except ImportError:
                self.why = "python3-onnx is not installed (apt-get install -y python3-onnx)"
        if self.why is None:
            os.makedirs(self.dir, exist_ok=True)
            self.proc = subprocess.Popen([node, os.path.join(root, "native", "bench", "ort_peer.mjs")], cwd=root,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.kinds = {}

    @property
    def available(self):
        return self.proc is not None

    def _ask(self, req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the ONNX Runtime worker exited")
        return json.loads(line)

    def _request(self, case, kind, k, head0=None):
        from onnx_models import model_bytes
        H, L, d, causal = case["heads"] * case["batch"], case["len"], case["dim"], bool(case.get("causal"))
        path = os.path.join(self.dir, f"{kind}_h{H}_l{L}_d{d}{'_causal' if causal else ''}.onnx")
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(model_bytes(kind, H, L, d, causal))
        req = dict(model=path, kind=kind, heads=H, len=L, dim=d, k=k)
        if head0:
            req["head0"] = head0
        return self._ask(req)

    def prepare(self, case, dump):
        """Picks the graph for `case` and validates it on head 0; returns the check() dict plus 'kind'."""
        L, d, causal = case["len"], case["dim"], bool(case.get("causal"))
        q, k, v, o = (np.fromfile(dump + ext, dtype=np.float32).reshape(L, d) for ext in (".q", ".k", ".v", ".o"))
        head0 = dict(q=dump + ".q", k=dump + ".k", v=dump + ".v", out=dump + ".ort")
        errors = []
        for kind in ("mha", "msm"):
            ans = self._request(case, kind, 0, head0)
            if "error" in ans:
                errors.append(f"{kind}: {ans['error']}")
                continue
            self.version = ans["version"]
            rep = check(np.fromfile(head0["out"], dtype=np.float32).reshape(L, d), o, q, k, v, causal)
            rep["kind"] = kind
            rep["fallback_reason"] = errors[0] if errors else None
            self.kinds[case["name"]] = kind
            return rep
        raise RuntimeError("ONNX Runtime ran neither graph: " + "; ".join(errors))

    def time(self, case, k):
        ans = self._request(case, self.kinds[case["name"]], k)
        if "error" in ans:
            raise RuntimeError(f"ONNX Runtime failed on {case['name']}: {ans['error']}")
        return ans["ms"]

    def close(self):
        if self.proc:
            self.proc.stdin.close()
            self.proc.wait()
