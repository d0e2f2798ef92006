#!/usr/bin/env python3
"""device_table.py LOGDIR - step 7 of device_check.sh: one Markdown table of LOGDIR/bench.csv
(qkscope_cuda_bench) and LOGDIR/torch.csv (device_peers.py), then the issue's two targets:
  * bf16 scaled-dot forward, Llama-7B shape (L 4096, d 128, causal): the faster of versions 4/5
    at >= 50% of the speed of PyTorch SDPA's fastest backend in bf16, same run;
  * fused additive (version 3, L 512, d = d_h = 512): >= 20x the broadcast PyTorch module.
Prints the table and the targets; the table goes to stdout only (the caller tees it).
"""
import csv
import os
import sys

PRESETS = ["bert-base", "gpt2", "llama-7b", "additive"]


def main():
    log = sys.argv[1]
    rows = []
    for f in ("bench.csv", "torch.csv"):
        p = os.path.join(log, f)
        if os.path.exists(p):
            rows += list(csv.reader(open(p)))
    impls, cell, ms_of, ceilings = [], {}, {}, []
    for r in rows:
        preset, impl, prec, ms, tf, err, ok, note = (r + [""] * 8)[:8]
        ms = float(ms) if ms else -1.0
        if preset == "ceiling":
            ceilings.append(f"{impl}: {float(tf):.0f} ({ms:.3f} ms)")
            continue
        key = f"{impl} ({prec})"
        if key not in impls:
            impls.append(key)
        if ms > 0:
            text = f"{ms:.3f} ms, {float(tf):.1f} TF/s" + ("" if ok == "ok" else " FAILED")
            if ok == "ok":
                ms_of[(impl, prec, preset)] = ms
        else:
            text = "n/a" if note else "-"
        cell[(key, preset)] = text
    if ceilings:
        print("Ceilings measured in this run: " + "; ".join(ceilings) + "\n")
    print("| implementation | " + " | ".join(PRESETS) + " |")
    print("|---|" + "---|" * len(PRESETS))
    for k in impls:
        print(f"| {k} | " + " | ".join(cell.get((k, p), "-") for p in PRESETS) + " |")

    print("\nTargets:")
    ours = {i: ms for (i, prec, p), ms in ms_of.items() if p == "llama-7b" and prec == "bf16" and i[:2] in ("v4", "v5")}
    sdpa = {i: ms for (i, prec, p), ms in ms_of.items() if p == "llama-7b" and prec == "bf16" and i.startswith("PyTorch SDPA")}
    if ours and sdpa:
        oi, om = min(ours.items(), key=lambda kv: kv[1])
        si, sm = min(sdpa.items(), key=lambda kv: kv[1])
        r = sm / om
        print(f"- bf16 Llama-7B causal forward: {oi} {om:.3f} ms vs {si} {sm:.3f} ms: {100 * r:.0f}% of the best "
              f"SDPA backend's speed (target >= 50%): {'met' if r >= 0.5 else 'NOT met'}")
    else:
        print("- bf16 Llama-7B causal forward: not measured (missing rows)")
    add = {i: ms for (i, prec, p), ms in ms_of.items() if p == "additive"}
    v3 = [ms for i, ms in add.items() if i.startswith("v3")]
    mod = [ms for i, ms in add.items() if i.startswith("PyTorch broadcast")]
    if v3 and mod:
        r = mod[0] / v3[0]
        print(f"- fused additive: v3 {v3[0]:.4f} ms vs PyTorch broadcast module {mod[0]:.4f} ms: {r:.1f}x "
              f"(target >= 20x): {'met' if r >= 20 else 'NOT met'}")
    else:
        print("- fused additive: not measured (missing rows)")


if __name__ == "__main__":
    main()
