# One mask, four conventions. keep: bool (B, L_k), True = a real key the query may attend.
import torch


def sdpa_attn_mask(keep):
    # F.scaled_dot_product_attention: bool attn_mask, True = may attend; (B, 1, 1, L_k).
    return keep[:, None, None, :]


def mha_key_padding_mask(keep):
    # nn.MultiheadAttention: key_padding_mask, True = IGNORE this key; (B, L_k).
    return ~keep


def hf_attention_mask(keep):
    # Hugging Face tokenizers and models: attention_mask, 1 = real token, 0 = padding.
    return keep.long()


def flex_mask_mod(lengths):
    # FlexAttention: mask_mod(b, h, q_idx, kv_idx) returns True = may attend.
    def mask_mod(b, h, q_idx, kv_idx):
        return kv_idx < lengths[b]
    return mask_mod
