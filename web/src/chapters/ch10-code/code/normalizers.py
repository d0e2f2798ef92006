# Normalizers: a row of logits z (masked entries -inf) -> weights over the keys.
# Rows with no visible key get weights 0 (plain softmax would give 0/0 = NaN).
import torch


def softmax(z, tau=1.0):
    m = z.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))  # empty row: no shift
    e = torch.exp((z - m) / tau)                                 # exp(-inf) = 0
    s = e.sum(dim=-1, keepdim=True)
    return e / torch.where(s > 0, s, torch.ones_like(s))


def hard(z):
    # One-hot of the argmax; ties go to the lowest index (torch.argmax returns the first).
    p = torch.zeros_like(z)
    p.scatter_(-1, z.argmax(dim=-1, keepdim=True), 1.0)
    return torch.where(torch.isfinite(z).any(-1, keepdim=True), p, torch.zeros_like(p))


def sparsemax(z, tau=1.0):           # Martins & Astudillo 2016, Algorithm 1
    y = z / tau
    ys, _ = torch.sort(y, dim=-1, descending=True)
    r = torch.arange(1, y.shape[-1] + 1, dtype=y.dtype)
    cs = ys.cumsum(-1)
    support = (1 + r * ys) > cs                           # prefix of the sorted row
    k = support.sum(dim=-1, keepdim=True).clamp_min(1)
    thr = (cs.gather(-1, k - 1) - 1) / k
    p = (y - thr).clamp_min(0)
    return torch.where(torch.isfinite(z).any(-1, keepdim=True), p, torch.zeros_like(p))


def topk_softmax(z, k, tau=1.0):
    # Softmax over the k largest logits; ties at the k-th value go to the lower key index
    # (a stable sort keeps equal logits in index order).
    k = min(k, z.shape[-1])
    order = torch.sort(z, dim=-1, descending=True, stable=True).indices[..., :k]
    keep = torch.zeros_like(z, dtype=torch.bool).scatter(-1, order, True)
    return softmax(z.masked_fill(~keep, float("-inf")), tau)
