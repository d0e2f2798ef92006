# Scoring functions f(q, k) in PyTorch, one per entry of qkscope's registry.
# Q: (L_q, d_q), K: (L_k, d_k); every function returns S: (L_q, L_k).
# Leading batch/head dimensions broadcast: Q (B, H, L_q, d) and K (B, H, L_k, d) work too.
import math
import torch


def dot(Q, K):                       # Luong 2015, eq. 8 ("dot"); needs d_q = d_k
    return Q @ K.transpose(-2, -1)


def scaled_dot(Q, K):                # Vaswani 2017, eq. 1
    return Q @ K.transpose(-2, -1) / math.sqrt(K.shape[-1])


def cosine(Q, K, eps=1e-8):          # each vector divided by max(|x|, eps) on its own
    Qn = Q / Q.norm(dim=-1, keepdim=True).clamp_min(eps)
    Kn = K / K.norm(dim=-1, keepdim=True).clamp_min(eps)
    return Qn @ Kn.transpose(-2, -1)


def bilinear(Q, K, W):               # Luong 2015 ("general"): q^T W k, W: (d_q, d_k)
    return (Q @ W) @ K.transpose(-2, -1)


def additive(Q, K, W_q, W_k, v, b):  # Bahdanau 2015: v^T tanh(W_q q + W_k k + b)
    a = Q @ W_q.T                    # (L_q, d_h)
    c = K @ W_k.T + b                # (L_k, d_h)
    # Broadcast to (L_q, L_k, d_h): simple, but it stores L_q * L_k * d_h numbers.
    return torch.tanh(a.unsqueeze(-2) + c.unsqueeze(-3)) @ v


def linear_concat(Q, K, w):          # w^T [q; k] = w_q . q + w_k . k
    d_q = Q.shape[-1]
    return (Q @ w[:d_q]).unsqueeze(-1) + (K @ w[d_q:]).unsqueeze(-2)


def neg_sq_euclidean(Q, K):          # -|q - k|^2 (Kim 2021, L2 attention)
    diff = Q.unsqueeze(-2) - K.unsqueeze(-3)         # (L_q, L_k, d)
    return -(diff * diff).sum(-1)
