#!/usr/bin/env python3
"""High-precision values of a fuzz case, for the right values in tests/core/faults/.

The fault tests' "mpmath, 60 digits" constants come from this: it evaluates the definition of
softmax attention (Bahdanau et al. 2015, A.1.2, for the additive score; Kim, Papamakarios &
Mnih 2021 for negative squared Euclidean; the linear concat score w . [q; k], Bahdanau et al.
2015's concat form without its tanh) and its analytic gradients at 60 decimal digits, from
the float inputs that the harness prints. Not part of `npm test` (needs python3-mpmath:
`apt-get install python3-mpmath`).

    QKSCOPE_FUZZ_DESCRIBE=1 build/sanitize/tests/fuzz/fuzz_attention -runs=0 INPUT > case.txt 2>&1
    python3 tests/fuzz/mpmath_oracle.py case.txt

Supported: scores additive, neg_sq_euclidean and linear_concat, the softmax normalizer, key
padding, causal (both alignments), windows and keep masks. Cases with a softcap, ALiBi, relative,
T5 or dense bias are refused. Prints output, dQ, dK, dv (additive), dw (linear concat) and
dL/dtemperature.
"""
import re
import struct
import sys

import mpmath as mp

mp.mp.dps = 60


def f32(x):
    """The float the harness holds: it prints each float entry in 9 significant digits, which
    name that float but are not its value (0.0399999991 is 0.039999999105930328...). Read as
    decimals, keys tied to the printed digits but not to the bit moved a cancelling dw_k by
    2.7e-7 relative (linear-concat-dw-tied-keys-fourteenth-2026-12-06)."""
    return mp.mpf(struct.unpack('f', struct.pack('f', float(x)))[0])


def parse(text):
    blk = text[text.index('case\n'):]

    def rows(name):
        m = re.search(r'^  %s = (.*)$' % re.escape(name), blk, re.M)
        return [[f32(x) for x in r.split()] for r in re.findall(r'\[([^\]]*)\]', m.group(1))] if m else None

    def vec(name):
        m = re.search(r'^  %s = \[(.*)\]$' % re.escape(name), blk, re.M)
        return [f32(x) for x in m.group(1).split()] if m else []

    for unsupported in ('relative 0', 'alibi -', 'softcap -', 't5 0', 'dense 0'):
        if unsupported not in blk:
            sys.exit('mpmath_oracle: biases are not supported (%s)' % unsupported)
    if 'normalizer softmax' not in blk:
        sys.exit('mpmath_oracle: only the softmax normalizer is supported')
    c = {'score': re.search(r'score (\S+),', blk).group(1)}
    hdr = re.search(r'temperature ([^,]+), scale (\S+)', blk)
    c['tau'] = mp.mpf(float(hdr.group(1)))  # a double (17 digits), as the double core takes it
    c['Q'], c['K'], c['V'], c['dO'] = rows('Q'), rows('K'), rows('V'), rows('dO')
    c['W_q'], c['W_k'], c['v'], c['b'], c['w'] = rows('W_q'), rows('W_k'), vec('v'), vec('b'), vec('w')
    if c['score'] not in ('additive', 'neg_sq_euclidean', 'linear_concat'):
        sys.exit('mpmath_oracle: score %s is not supported' % c['score'])
    if hdr.group(2) != 'default':
        c['scale'] = mp.mpf(float(hdr.group(2)))
    else:  # score/*.hpp: default_scale
        c['scale'] = 1 / mp.sqrt(len(c['Q'][0])) if c['score'] == 'neg_sq_euclidean' else mp.mpf(1)
    m = re.search(r'mask: key_length (-?\d+), causal (\d), window (-?\d+)/(-?\d+)', blk)
    c['key_length'], c['causal'], c['left'], c['right'] = [int(x) for x in m.groups()]
    c['bottom_right'] = 'bottom_right' in blk
    k = re.search(r'keep \((\d+) x (\d+)\) = (.*)$', blk, re.M)
    c['keep'] = [[int(x) for x in r.split()] for r in re.findall(r'\[([^\]]*)\]', k.group(3))] if k else None
    return c


def evaluate(c):
    Q, K, V, dO, tau, scale = c['Q'], c['K'], c['V'], c['dO'], c['tau'], c['scale']
    L_q, L_k, d_q, d_k, d_v = len(Q), len(K), len(Q[0]), len(K[0]), len(V[0])
    additive, concat = c['score'] == 'additive', c['score'] == 'linear_concat'
    w = c['w']  # linear concat: w_q = w[:d_q], w_k = w[d_q:]
    d_h = len(c['v']) if additive else 0
    if additive:
        A = [[c['b'][h] + mp.fsum(c['W_q'][h][a] * Q[i][a] for a in range(d_q)) for h in range(d_h)] for i in range(L_q)]
        B = [[mp.fsum(c['W_k'][h][a] * K[j][a] for a in range(d_k)) for h in range(d_h)] for j in range(L_k)]

    def allowed(i, j):  # core/reference/reference.hpp, allowed
        diag = i + (L_k - L_q) if c['bottom_right'] else i
        return not ((c['key_length'] >= 0 and j >= c['key_length']) or (c['causal'] and j > diag) or
                    (c['left'] >= 0 and j < diag - c['left']) or (c['right'] >= 0 and j > diag + c['right']) or
                    (c['keep'] and not c['keep'][i][j]))

    def score(i, j):  # s_ij, the scale included
        if additive:
            return scale * mp.fsum(c['v'][h] * mp.tanh(A[i][h] + B[j][h]) for h in range(d_h))
        if concat:
            return scale * (mp.fsum(w[a] * Q[i][a] for a in range(d_q)) + mp.fsum(w[d_q + a] * K[j][a] for a in range(d_k)))
        return -scale * mp.fsum((Q[i][a] - K[j][a]) ** 2 for a in range(d_q))

    out, lse = [], []
    dQ = [[mp.mpf(0)] * d_q for _ in range(L_q)]
    dK = [[mp.mpf(0)] * d_k for _ in range(L_k)]
    dv, dtau = [mp.mpf(0)] * d_h, mp.mpf(0)
    dw = [mp.mpf(0)] * len(w) if concat else []
    for i in range(L_q):
        js = [j for j in range(L_k) if allowed(i, j)]
        if not js:  # a fully masked row: output 0, no gradient
            out.append([mp.mpf(0)] * d_v)
            lse.append(-mp.inf)
            continue
        s = {j: score(i, j) for j in js}
        top = max(s.values())
        e = {j: mp.exp((s[j] - top) / tau) for j in js}
        Z = mp.fsum(e.values())
        P = {j: e[j] / Z for j in js}
        out.append([mp.fsum(P[j] * V[j][a] for j in js) for a in range(d_v)])
        lse.append(top / tau + mp.log(Z))
        dP = {j: mp.fsum(dO[i][a] * V[j][a] for a in range(d_v)) for j in js}
        D = mp.fsum(P[j] * dP[j] for j in js)
        for j in js:
            dz = P[j] * (dP[j] - D)   # dL/dz, z = s / tau
            ds = dz / tau             # dL/ds
            dtau -= dz * s[j] / tau ** 2
            if additive:
                for h in range(d_h):
                    t = mp.tanh(A[i][h] + B[j][h])
                    g = ds * scale * c['v'][h] * (1 - t * t)  # dL/dA_ih = dL/dB_jh share
                    dv[h] += ds * scale * t
                    for a in range(d_q):
                        dQ[i][a] += g * c['W_q'][h][a]
                    for a in range(d_k):
                        dK[j][a] += g * c['W_k'][h][a]
            elif concat:  # s = scale (w_q . q + w_k . k)
                for a in range(d_q):
                    dQ[i][a] += ds * scale * w[a]
                    dw[a] += ds * scale * Q[i][a]
                for a in range(d_k):
                    dK[j][a] += ds * scale * w[d_q + a]
                    dw[d_q + a] += ds * scale * K[j][a]
            else:  # s = -scale |q - k|^2
                for a in range(d_q):
                    dQ[i][a] += ds * scale * -2 * (Q[i][a] - K[j][a])
                    dK[j][a] += ds * scale * 2 * (Q[i][a] - K[j][a])
    return {'output': out, 'logsumexp': lse, 'dQ': dQ, 'dK': dK, 'dv': dv, 'dw': dw, 'dtemperature': dtau}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    r = evaluate(parse(open(sys.argv[1]).read()))
    fmt = lambda x: mp.nstr(x, 15)
    for name, value in r.items():
        if isinstance(value, list):
            print(name, [[fmt(x) for x in row] if isinstance(row, list) else fmt(row) for row in value])
        else:
            print(name, fmt(value))


if __name__ == '__main__':
    main()
