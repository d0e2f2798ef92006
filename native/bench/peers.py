#!/usr/bin/python3
"""bench:peers - qkscope's tiled CPU kernels next to PyTorch on the CPU, in the same run.

One thread on both sides. Each case is run in R rounds; every round times PyTorch (in this
process) and then qkscope_bench (a child process that validates against the double
reference before timing, and times its own Eigen GEMM interleaved with the kernel), so
machine load hits both sides alike. Reported: medians over all samples, and the ratio
PyTorch time / qkscope time (> 1: qkscope is faster).

Peers (PyTorch 1.13 from Debian python3-torch, BLAS = OpenBLAS from libopenblas0-pthread):
  * scaled dot: matmul -> softmax -> matmul (the pre-SDPA way every tutorial writes it);
  * additive: the textbook broadcast module (d2l.ai "Additive Attention"): tanh of the
    (B, L_q, L_k, d_h) sum tensor, then a Linear(d_h, 1);
  * linear concat: w^T [q_i; k_j] with the (B, L_q, L_k, d_q + d_k) concatenation built by
    broadcasting, then a Linear(d_q + d_k, 1).

ONNX Runtime (onnxruntime-node from npm, a devDependency; CPU execution provider, MLAS kernels):
  * scaled dot only: the com.microsoft MultiHeadAttention contrib operator when this ONNX Runtime
    runs it, else the MatMul-Softmax-MatMul graph (native/bench/onnx_models.py generates both
    with Debian python3-onnx into build/bench/onnx/); one intra-op and one inter-op thread, run
    by a Node worker (native/bench/ort_peer.mjs). Before timing, head 0 of the timed session
    is given qkscope_bench's head-0 inputs (--dump-head0) and its output must pass the test
    suite's tolerance rule against a float64 NumPy reference and agree with qkscope's output.

PyTorch is timed twice: as installed ("stock": glibc malloc returns every large score
tensor to the OS, so each call page-faults it back in; this is what a user of Debian's
torch gets) and in a worker process with MALLOC_MMAP_MAX_=0 and a huge
MALLOC_TRIM_THRESHOLD_ ("tuned": no page faults after the first call, PyTorch's best
case here). qkscope's kernels allocate O(L d) and are not affected by either setting.

Nothing is installed by this script. It needs Debian's torch for /usr/bin/python3 (the
`python3` on PATH may be another interpreter):
    apt-get install -y python3-torch libopenblas0-pthread python3-onnx
and `npm ci` for onnxruntime-node (the ONNX Runtime column is left out, with a note, without them).

Usage: /usr/bin/python3 native/bench/peers.py [--rounds R] [--repeats K] [--quick] [--no-build] [--check]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# One thread for every BLAS / OpenMP pool, set before torch loads them.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = "1"

APT = "apt-get install -y python3-torch libopenblas0-pthread python3-onnx"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "build", "bench", "native", "bench", "qkscope_bench")


def fail(msg, code=3):
    print(f"bench:peers: {msg}", file=sys.stderr)
    sys.exit(code)


try:
    import torch
    from torch import nn
except ImportError:
    fail(f"PyTorch is not installed for {sys.executable}. Install Debian's package with\n"
         f"  {APT}\n(nothing was installed)")

# After the check above: peer_ort needs NumPy, which comes with Debian's python3-torch.
from peer_ort import OrtPeer  # noqa: E402


def blas_library():
    """The BLAS shared object torch's matmul really uses (Debian torch: libblas.so.3)."""
    a = torch.randn(64, 64)
    (a @ a).sum()
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "blas" in line.lower()}
    return sorted(libs)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


class AdditiveAttention(nn.Module):
    """d2l.ai's additive attention: scores by broadcasting to (B, L_q, L_k, d_h)."""

    def __init__(self, d_q, d_k, d_h):
        super().__init__()
        self.W_q = nn.Linear(d_q, d_h, bias=False)
        self.W_k = nn.Linear(d_k, d_h, bias=False)
        self.w_v = nn.Linear(d_h, 1, bias=False)

    def forward(self, q, k, v):
        features = torch.tanh(self.W_q(q).unsqueeze(2) + self.W_k(k).unsqueeze(1))
        scores = self.w_v(features).squeeze(-1)
        return torch.bmm(torch.softmax(scores, dim=-1), v)


class ConcatAttention(nn.Module):
    """w^T [q_i; k_j] with the concatenation built by broadcasting: (B, L_q, L_k, d_q + d_k)."""

    def __init__(self, d_q, d_k):
        super().__init__()
        self.w = nn.Linear(d_q + d_k, 1, bias=False)

    def forward(self, q, k, v):
        B, Lq, Lk = q.shape[0], q.shape[1], k.shape[1]
        feats = torch.cat([q.unsqueeze(2).expand(B, Lq, Lk, -1), k.unsqueeze(1).expand(B, Lq, Lk, -1)], dim=-1)
        scores = self.w(feats).squeeze(-1)
        return torch.bmm(torch.softmax(scores, dim=-1), v)


def torch_case(case):
    """A zero-argument callable running the PyTorch peer of `case` once."""
    g = torch.Generator().manual_seed(1)
    B, H, L, d = case["batch"], case["heads"], case["len"], case["dim"]
    if case["score"] == "scaled_dot":
        q, k, v = (torch.randn(B, H, L, d, generator=g) for _ in range(3))
        scale = d ** -0.5
        mask = torch.ones(L, L, dtype=torch.bool).triu(1) if case.get("causal") else None

        def run():
            s = torch.matmul(q, k.transpose(-2, -1)) * scale
            if mask is not None:
                s = s.masked_fill(mask, float("-inf"))
            return torch.matmul(torch.softmax(s, dim=-1), v)
        return run
    q, k, v = (torch.randn(B * H, L, d, generator=g) for _ in range(3))
    module = AdditiveAttention(d, d, case["d_h"]) if case["score"] == "additive" else ConcatAttention(d, d)
    return lambda: module(q, k, v)


def time_torch(fn, k):
    out = []
    with torch.inference_mode():
        for _ in range(k):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1e3)
    return out


TUNED_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 40)}


def worker():
    """--worker: read one JSON case per line, answer with the JSON list of k timings."""
    torch.set_num_threads(1)
    fns = {}
    for line in sys.stdin:
        req = json.loads(line)
        name = req["case"]["name"]
        if name not in fns:
            fns.clear()  # one case's tensors at a time
            fns[name] = torch_case(req["case"])
            time_torch(fns[name], 1)  # warm
        print(json.dumps(time_torch(fns[name], req["k"])), flush=True)
    return 0


def time_torch_gemm():
    """OpenBLAS sgemm 512^3 through torch, GFLOP/s: the best of 3 calls (one sample is too noisy)."""
    a, b = torch.randn(512, 512), torch.randn(512, 512)
    a @ b
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * 512 ** 3 / (best * 1e9)


def run_qkscope(case, k, path, dump=None):
    args = [BENCH, "--threads", "1", "--naive", "0", "--repeats", str(k), "--json", path,
            "--batch", str(case["batch"]), "--heads", str(case["heads"]), "--len", str(case["len"]),
            "--dim", str(case["dim"]), "--score", case["score"], "--causal", "1" if case.get("causal") else "0"]
    if case.get("d_h"):
        args += ["--dh", str(case["d_h"])]
    if dump:
        args += ["--dump-head0", dump]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"qkscope_bench failed ({p.returncode}) on {case['name']}:\n{p.stdout}{p.stderr}", 1)
    with open(path) as f:
        return json.load(f)


CASES = [
    # name, target: the target for this row (ratio PyTorch time / qkscope time)
    dict(name="scaled_dot B=1 H=12 L=512 d=64 (bert-base)", score="scaled_dot", batch=1, heads=12, len=512, dim=64),
    dict(name="scaled_dot B=1 H=12 L=1024 d=64", score="scaled_dot", batch=1, heads=12, len=1024, dim=64, target=2.0),
    dict(name="scaled_dot B=1 H=12 L=1024 d=64 causal (gpt2)", score="scaled_dot", batch=1, heads=12, len=1024,
         dim=64, causal=True),
    dict(name="scaled_dot B=1 H=1 L=2048 d=64", score="scaled_dot", batch=1, heads=1, len=2048, dim=64, target=2.0),
    dict(name="scaled_dot B=1 H=4 L=2048 d=64", score="scaled_dot", batch=1, heads=4, len=2048, dim=64, target=2.0),
    dict(name="scaled_dot B=1 H=1 L=4096 d=64", score="scaled_dot", batch=1, heads=1, len=4096, dim=64, target=2.0),
    dict(name="additive L=512 d=d_h=512 (broadcast module)", score="additive", batch=1, heads=1, len=512, dim=512,
         d_h=512, target=20.0),
    dict(name="linear_concat L=512 d=512 (broadcast module)", score="linear_concat", batch=1, heads=1, len=512,
         dim=512),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5, help="timed calls per side per round")
    ap.add_argument("--quick", action="store_true", help="one round of 3 calls (smoke test)")
    ap.add_argument("--no-build", action="store_true", help="use the existing qkscope_bench binary")
    ap.add_argument("--check", action="store_true", help="exit 5 when a row misses its target (vs stock PyTorch)")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "bench", "peers.json"))
    a = ap.parse_args()
    if a.worker:
        return worker()
    if a.quick:
        a.rounds, a.repeats = 1, 3
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    blas = blas_library()
    if not any("openblas" in x for x in blas):
        fail(f"torch's BLAS is {blas or 'unknown'}, not OpenBLAS; the comparison assumes OpenBLAS. Install it with\n"
             f"  {APT}")
    if not a.no_build:
        for cmd in (["cmake", "--preset", "bench"],
                    ["cmake", "--build", "--preset", "bench", "--target", "qkscope_bench", "--parallel"]):
            if subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL).returncode != 0:
                fail("building qkscope_bench failed: " + " ".join(cmd), 1)
    if not os.path.exists(BENCH):
        fail(f"{BENCH} is missing (run without --no-build)", 1)

    load_start = loadavg()
    print(f"CPU: {cpu_model()}, {os.cpu_count()} cores; load average {load_start}")
    print(f"PyTorch {torch.__version__}, BLAS {', '.join(blas)}; one thread each side; "
          f"{a.rounds} rounds x {a.repeats} calls, interleaved")
    tuned = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env={**os.environ, **TUNED_ENV})
    tmp = os.path.join(ROOT, "build", "bench", "peers_case.json")
    ort = OrtPeer(ROOT)
    if ort.available:
        print("ONNX Runtime (onnxruntime-node, CPU EP): one intra-op thread, validated on head 0 before timing")
    else:
        print(f"ONNX Runtime column left out: {ort.why}")
    rows = []
    for case in CASES:
        fn = torch_case(case)
        time_torch(fn, 1)  # warm
        t_torch, t_tuned, t_qk, gemm_eigen, gemm_torch, last = [], [], [], [], [], None
        t_ort, ort_rep = [], None
        if ort.available and case["score"] == "scaled_dot":
            dump = os.path.join(ROOT, "build", "bench", "peers_head0")
            run_qkscope(case, 1, tmp, dump)
            ort_rep = ort.prepare(case, dump)
            if not ort_rep["ok"]:
                fail(f"ONNX Runtime ({ort_rep['kind']}) failed validation on {case['name']}: max_abs "
                     f"{ort_rep['max_abs']:.3g} (tol {ort_rep['tol']:.3g}), vs qkscope {ort_rep['vs_qkscope']:.3g} "
                     f"(tol {2 * ort_rep['tol']:.3g})", 1)
        for _ in range(a.rounds):
            gemm_torch.append(time_torch_gemm())
            t_torch += time_torch(fn, a.repeats)
            tuned.stdin.write(json.dumps(dict(case=case, k=a.repeats)) + "\n")
            tuned.stdin.flush()
            t_tuned += json.loads(tuned.stdout.readline())
            last = run_qkscope(case, a.repeats, tmp)
            t_qk += last["tiled_samples_ms"]
            gemm_eigen.append(last["gemm_gflops"])
            if ort_rep:
                t_ort += ort.time(case, a.repeats)
        del fn
        qk_ms, pt_ms, tu_ms = statistics.median(t_qk), statistics.median(t_torch), statistics.median(t_tuned)
        flops = last["tiled_gflops"] * last["tiled_ms"] * 1e6
        row = dict(case=case["name"], score=case["score"], len=case["len"], dim=case["dim"],
                   heads=case["heads"] * case["batch"], causal=bool(case.get("causal")), qkscope_ms=qk_ms, pytorch_ms=pt_ms,
                   pytorch_tuned_ms=tu_ms, ratio=pt_ms / qk_ms, ratio_tuned=tu_ms / qk_ms, target=case.get("target"),
                   qkscope_gflops=flops / (qk_ms * 1e6), pytorch_gflops=flops / (pt_ms * 1e6),
                   pytorch_tuned_gflops=flops / (tu_ms * 1e6),
                   eigen_gemm_gflops=statistics.median(gemm_eigen), torch_gemm_gflops=statistics.median(gemm_torch),
                   qkscope_pct_of_gemm=100 * flops / (qk_ms * 1e6) / statistics.median(gemm_eigen),
                   validated_max_abs=last["validated_max_abs"], qkscope_peak_rss_mb=last["peak_rss_mb"],
                   qkscope_extra_rss_mb=last["peak_rss_mb"] - last["rss_before_mb"],
                   load=loadavg())
        row["qkscope_pct_of_openblas_gemm"] = 100 * row["qkscope_gflops"] / row["torch_gemm_gflops"]
        if ort_rep:
            ort_ms = statistics.median(t_ort)
            row.update(ort_ms=ort_ms, ratio_ort=ort_ms / qk_ms, ort_gflops=flops / (ort_ms * 1e6),
                       ort_graph=ort_rep["kind"], ort_fallback_reason=ort_rep["fallback_reason"],
                       ort_validated_max_abs=ort_rep["max_abs"], ort_vs_qkscope_max_abs=ort_rep["vs_qkscope"])
        rows.append(row)
        print(f"  {row['case']}: qkscope {qk_ms:.2f} ms, PyTorch {pt_ms:.2f} ms (tuned malloc {tu_ms:.2f} ms), "
              f"ratio {row['ratio']:.2f} ({row['ratio_tuned']:.2f})"
              + (f", ONNX Runtime {row['ort_ms']:.2f} ms ({row['ort_graph']}, ratio {row['ratio_ort']:.2f})"
                 if "ort_ms" in row else "") + f" (load {row['load']})", flush=True)
    tuned.stdin.close()
    tuned.wait()
    ort.close()

    load_end = loadavg()

    def met(r, key):
        return "" if r["target"] is None else ("met" if r[key] >= r["target"] else "NOT met")

    print()
    print("| case | qkscope ms | PyTorch ms stock / tuned malloc | ONNX Runtime ms (graph) | PyTorch / qkscope: stock "
          "| tuned malloc | ONNX Runtime / qkscope | target | GFLOP/s qkscope (% of Eigen / OpenBLAS GEMM) / PyTorch "
          "stock / tuned / ONNX Runtime | GEMM GFLOP/s Eigen / OpenBLAS | qkscope peak RSS (extra) MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ok = True
    for r in rows:
        dot = r["score"] == "scaled_dot"
        has_ort = "ort_ms" in r
        ok = ok and (r["target"] is None or r["ratio"] >= r["target"])
        target = "" if r["target"] is None else f">= {r['target']:g}x: stock {met(r, 'ratio')}, tuned {met(r, 'ratio_tuned')}"
        gflops = "-"
        if dot:
            gflops = (f"{r['qkscope_gflops']:.1f} ({r['qkscope_pct_of_gemm']:.0f}% / "
                      f"{r['qkscope_pct_of_openblas_gemm']:.0f}%) / {r['pytorch_gflops']:.1f} / "
                      f"{r['pytorch_tuned_gflops']:.1f} / " + (f"{r['ort_gflops']:.1f}" if has_ort else "-"))
        print(f"| {r['case']} | {r['qkscope_ms']:.2f} | {r['pytorch_ms']:.1f} / {r['pytorch_tuned_ms']:.1f} | "
              + (f"{r['ort_ms']:.2f} ({r['ort_graph']})" if has_ort else "-") + " | "
              f"**{r['ratio']:.2f}x** | **{r['ratio_tuned']:.2f}x** | "
              + (f"**{r['ratio_ort']:.2f}x**" if has_ort else "-") + f" | {target} | {gflops} | "
              f"{r['eigen_gemm_gflops']:.1f} / {r['torch_gemm_gflops']:.1f} | "
              f"{r['qkscope_peak_rss_mb']:.1f} ({r['qkscope_extra_rss_mb']:.1f}) |")
    print(f"\nload average: start {load_start}, end {load_end}. Medians of {a.rounds * a.repeats} samples per "
          "side; qkscope validated against the double reference before timing, ONNX Runtime against it and "
          "qkscope's output. 'tuned malloc': PyTorch in a "
          "process with " + " ".join(f"{k}={v}" for k, v in TUNED_ENV.items()) + ".")
    eigen, blas_rate = statistics.median(r["eigen_gemm_gflops"] for r in rows), statistics.median(
        r["torch_gemm_gflops"] for r in rows)
    if eigen < blas_rate / 3:  # both are one-thread sgemm 512^3; a build without -march=native is ~8x slower
        print(f"NOTE: Eigen's GEMM ran at {eigen:.1f} GFLOP/s, OpenBLAS at {blas_rate:.1f}: {BENCH} looks built "
              "without the bench preset's -O3 -march=native, so qkscope's figures above understate it "
              "(run without --no-build).")
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        # Schema: docs/bench-json.md ("qkscope-peers", version 1).
        json.dump(dict(schema="qkscope-peers", version=1, cpu=cpu_model(), cores=os.cpu_count(),
                       date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), torch=torch.__version__, blas=blas,
                       onnxruntime=ort.version, load_start=load_start, load_end=load_end, rounds=a.rounds,
                       repeats=a.repeats, tuned_env=TUNED_ENV, rows=rows), f, indent=1)
    print(f"wrote {a.json}")
    return 5 if a.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
