#!/usr/bin/env python3
"""device_peers.py - PyTorch on the GPU next to qkscope_cuda_bench (step 6 of device_check.sh).

Appends CSV rows (preset, implementation, precision, ms, TFLOP/s, max_abs, ok, note) to argv[1]:
  * the two ceilings of the machine: a device-to-device copy (GB/s, bytes read + written) and
    an 8192^3 bf16 matmul on random data (TFLOP/s);
  * F.scaled_dot_product_attention on the bench presets in fp16, bf16 and fp32, once with
    PyTorch's own choice and once with each backend forced (flash, efficient, cudnn, math);
    a backend that refuses a case is recorded as n/a with its reason;
  * the additive case (L = 512, d = d_h = 512, fp32) as the textbook broadcast module
    (d2l.ai "Additive Attention": tanh of the (B, L_q, L_k, d_h) sum, then Linear(d_h, 1)),
    the same module native/bench/peers.py times on the CPU.
FLOPs are counted as qkscope_cuda_bench counts them (4 d per visible pair; additive
3 d_h + 2 d_v), so TFLOP/s columns compare directly. Timing: CUDA events around each call,
median of 20 after 3 warm-up calls, fresh random inputs (never zeros).
"""
import sys

import torch
import torch.nn.functional as F
from torch import nn

PRESETS = {"bert-base": (12, 512, 64, False), "gpt2": (12, 1024, 64, True), "llama-7b": (32, 4096, 128, True)}
REPEATS = 20


def median_ms(fn, repeats=REPEATS):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return sorted(ts)[len(ts) // 2]


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


def main():
    out = open(sys.argv[1], "a")

    def row(preset, impl, prec, ms, tflops, note=""):
        out.write(f'{preset},"{impl}",{prec},{ms},{tflops},0,ok,"{note}"\n')
        out.flush()

    dev = torch.cuda.get_device_properties(0)
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, "
          f"{dev.name}, {dev.multi_processor_count} SMs")
    g = torch.Generator(device="cuda").manual_seed(1)

    # Ceilings: copy bandwidth and the bf16 matrix rate on random data.
    x = torch.randn(1 << 30, device="cuda", generator=g)  # 4 GiB
    y = torch.empty_like(x)
    ms = median_ms(lambda: y.copy_(x), 10)
    print(f"ceiling: device-to-device copy {2 * x.numel() * 4 / ms / 1e6:.0f} GB/s (read + write, {ms:.3f} ms)")
    row("ceiling", "copy GB/s (read+write)", "fp32", ms, 2 * x.numel() * 4 / ms / 1e6)
    del x, y
    a, b = (torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
    ms = median_ms(lambda: a @ b, 10)
    print(f"ceiling: bf16 matmul 8192^3 {2 * 8192 ** 3 / ms / 1e9:.0f} TFLOP/s ({ms:.3f} ms)")
    row("ceiling", "cuBLAS bf16 matmul 8192^3", "bf16", ms, 2 * 8192 ** 3 / ms / 1e9)
    del a, b

    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = [("default", None), ("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                ("cudnn", SDPBackend.CUDNN_ATTENTION), ("math", SDPBackend.MATH)]
    for name, (H, L, d, causal) in PRESETS.items():
        pairs = L * (L + 1) / 2 if causal else L * L
        flops = H * pairs * 4 * d
        for dt, tag in ((torch.float16, "fp16"), (torch.bfloat16, "bf16"), (torch.float32, "fp32")):
            q, k, v = (torch.randn(1, H, L, d, device="cuda", dtype=dt, generator=g) for _ in range(3))
            ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
            for bname, be in backends:
                label = f"PyTorch SDPA {bname}"
                try:
                    if be is None:
                        fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    else:
                        def fn(be=be):
                            with sdpa_kernel(be):
                                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    o = fn()
                    err = ((o.double() - ref).norm() / ref.norm()).item()
                    ms = median_ms(fn)
                except RuntimeError as e:
                    reason = str(e).strip().splitlines()[0][:80].replace('"', "'")
                    print(f"{name:10s} {label} {tag}: n/a ({reason})")
                    out.write(f'{name},"{label}",{tag},-1,0,0,ok,"n/a: {reason}"\n')
                    torch.cuda.synchronize()
                    continue
                print(f"{name:10s} {label} {tag}: {ms:.4f} ms, {flops / ms / 1e9:.1f} TFLOP/s, rel. error {err:.1e}")
                row(name, label, tag, ms, flops / ms / 1e9, f"rel err {err:.1e}")
            del q, k, v, ref

    # Additive: the broadcast module on the GPU, fp32 (qkscope's additive kernels are fp32).
    L, d, d_h = 512, 512, 512
    torch.manual_seed(1)
    module = AdditiveAttention(d, d, d_h).cuda()
    q, k, v = (torch.randn(1, L, d, device="cuda", generator=g) for _ in range(3))
    flops = L * L * (3.0 * d_h + 2.0 * d)
    with torch.inference_mode():
        ms = median_ms(lambda: module(q, k, v))
    print(f"additive   PyTorch broadcast module fp32: {ms:.4f} ms, {flops / ms / 1e9:.2f} TFLOP/s")
    row("additive", "PyTorch broadcast additive module", "fp32", ms, flops / ms / 1e9, f"torch {torch.__version__}")


if __name__ == "__main__":
    main()
