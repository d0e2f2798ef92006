# Boolean keep masks, True = may attend (the polarity of PyTorch SDPA's attn_mask).
# All return (L_q, L_k) or broadcast against it; combine masks with &.
import torch


def diagonal_offset(L_q, L_k, alignment="top_left"):
    # bottom_right puts the last query on the last key (decoding with a KV cache).
    return L_k - L_q if alignment == "bottom_right" else 0


def causal(L_q, L_k, alignment="top_left"):
    i = torch.arange(L_q).unsqueeze(-1)
    j = torch.arange(L_k)
    return j <= i + diagonal_offset(L_q, L_k, alignment)


def sliding_window(L_q, L_k, left, right, alignment="top_left"):
    i = torch.arange(L_q).unsqueeze(-1)
    rel = torch.arange(L_k) - (i + diagonal_offset(L_q, L_k, alignment))
    return (rel >= -left) & (rel <= right)


def key_padding(lengths, L_k):
    # lengths: (B,) valid keys per sequence -> (B, 1, L_k), broadcasts over queries.
    return (torch.arange(L_k) < lengths.unsqueeze(-1)).unsqueeze(-2)


def apply_mask(scores, keep):
    # -inf, never a large finite number: exact in every dtype.
    return scores.masked_fill(~keep, float("-inf"))
