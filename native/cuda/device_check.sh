#!/usr/bin/env bash
# native/cuda/device_check.sh — the CUDA backend's whole GPU check, one run, < 8 minutes on one
# H200 (a 460 s budget: each step's timeout is the smaller of its own cap and what is left, late
# steps are skipped with a message; the log and the table land in $OUT when it is set):
#   1. build Release for sm_90a (qkscope_cuda_tests, then qkscope_cuda_bench), ptxas -v usage
#   2. SASS: tensor-core (HMMA) and cp.async (LDGSTS) instructions per kernel (cuobjdump)
#   3. qkscope_cuda_tests "[gpu]": every version, score, mask, bias, GQA and the backward
#      against the CPU double reference (2x-of-naive-float32 rule, tests/core/support/compare.hpp)
#   4. compute-sanitizer memcheck and racecheck on one call of each version
#   5. qkscope_cuda_bench: BERT-base, GPT-2, Llama-7B, additive: validate, then time (CUDA events,
#      warm medians) next to a cuBLAS matmul-softmax-matmul baseline in fp32 and fp16
#   6. PyTorch SDPA on the same shapes, when python3 -c 'import torch' sees the GPU
#   7. one table (table.md)
# Before the first run, on the dev machine: bash native/cuda/device_deps.sh (Eigen, Catch2).
# Device tool: run(command="bash native/cuda/device_check.sh", carry=["build-deps"], timeout_s=540)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$PWD
LOG=${OUT:-$ROOT/build-device/logs}
mkdir -p "$LOG"
exec > >(tee -a "$LOG/device_check.log") 2>&1
T0=$SECONDS
BUDGET=${QKSCOPE_DEVICE_BUDGET_S:-460}  # the whole script stays under 8 minutes
step() { echo; echo "== [$((SECONDS - T0)) s] $*"; }
status=0
fail() { echo "!! $*"; status=1; }
# Seconds a step may take: its own cap, or what is left of the budget (0 = skip the step).
cap() {
  local left=$((BUDGET - (SECONDS - T0)))
  [ "$left" -lt 15 ] && { echo 0; return; }
  [ "$1" -lt "$left" ] && echo "$1" || echo "$left"
}
skip_if_late() {  # usage: t=$(cap 120); skip_if_late "$t" "what" || continue/return
  if [ "$1" -eq 0 ]; then echo "!! skipped (time budget of $BUDGET s spent): $2"; status=1; return 1; fi
}

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1 | head -3
nvcc --version | tail -2
cmake --version | head -1
BUILD=$ROOT/build-device/build
JOBS=$(nproc)

step "1. configure and build (Release, sm_90a)"
args=(-S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O3 -DNDEBUG"
      -DCMAKE_CUDA_ARCHITECTURES=90a -DQKSCOPE_CUDA=ON -DQKSCOPE_CUDA_PTXAS_VERBOSE=ON)
[ -d build-deps/usr ] && args+=("-DCMAKE_PREFIX_PATH=$ROOT/build-deps/usr")
command -v ninja > /dev/null && args+=(-G Ninja)
timeout "$(cap 120)" cmake "${args[@]}" > "$LOG/configure.log" 2>&1 || { tail -30 "$LOG/configure.log"; fail "configure"; exit 1; }
grep -E "qkscope: CUDA" "$LOG/configure.log"
timeout "$(cap 240)" cmake --build "$BUILD" --target qkscope_cuda_tests -j "$JOBS" > "$LOG/build.log" 2>&1 ||
  { grep -E "error" "$LOG/build.log" | head -30; fail "build qkscope_cuda_tests"; exit 1; }
timeout "$(cap 150)" cmake --build "$BUILD" --target qkscope_cuda_bench -j "$JOBS" >> "$LOG/build.log" 2>&1 ||
  { grep -E "error" "$LOG/build.log" | head -20; fail "build qkscope_cuda_bench"; }
# ptxas -v: registers, shared memory, spills of every kernel (demangled names shortened).
grep -E "Compiling entry function|Used [0-9]+ registers|spill" "$LOG/build.log" |
  sed -E "s/.*entry function '([^']*)'.*/\\1/; s/_ZN7qkscope4cuda4kern3gpu//" > "$LOG/ptxas.txt" || true
grep -c "Used" "$LOG/ptxas.txt" | xargs echo "ptxas reports:"
grep -iE "spill stores" "$LOG/ptxas.txt" | grep -v " 0 bytes spill stores" | head -5
LIB=$BUILD/native/cuda/libqkscope_cuda.a
TESTS=$BUILD/native/cuda/qkscope_cuda_tests
BENCH=$BUILD/native/cuda/qkscope_cuda_bench

step "2. SASS: HMMA (tensor cores) and LDGSTS (cp.async) per kernel"
if command -v cuobjdump > /dev/null; then
  cuobjdump -sass "$LIB" 2> /dev/null | awk '/Function :/ {f = $3} /HMMA/ {h[f]++} /LDGSTS/ {l[f]++}
    END {for (k in h) printf "HMMA %5d  LDGSTS %4d  %s\n", h[k], l[k], k; for (k in l) if (!(k in h)) printf "HMMA %5d  LDGSTS %4d  %s\n", 0, l[k], k}' |
    sed -E 's/_ZN7qkscope4cuda4kern3gpu//' | sort -k6 | tee "$LOG/sass.txt"
  [ -s "$LOG/sass.txt" ] || fail "no HMMA instruction found in libqkscope_cuda.a"
else
  echo "cuobjdump not found: skipped"
fi

step "3. GPU tests against the CPU double reference"
t=$(cap 150)
if skip_if_late "$t" "GPU tests"; then
  timeout "$t" "$TESTS" "[gpu]" --durations yes --use-colour no > "$LOG/tests.log" 2>&1 || fail "qkscope_cuda_tests [gpu] (exit $?)"
fi
grep -E "s: |test cases|All tests|FAILED|no CUDA device" "$LOG/tests.log" | tail -12

step "4. compute-sanitizer memcheck + racecheck (one call of each version)"
if command -v compute-sanitizer > /dev/null; then
  one="GPU and interpreter run the same kernels: results agree to float rounding"
  for tool in memcheck racecheck; do
    t=$(cap 90)
    skip_if_late "$t" "compute-sanitizer $tool" || continue
    timeout "$t" compute-sanitizer --tool "$tool" --error-exitcode 9 "$TESTS" "$one" > "$LOG/sanitizer_$tool.log" 2>&1
    rc=$?
    echo "$tool: exit $rc, $(grep -cE "^========= (Error|Race|Warning)" "$LOG/sanitizer_$tool.log") reports"
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$LOG/sanitizer_$tool.log" | tail -2
    [ $rc -eq 0 ] || fail "compute-sanitizer $tool (exit $rc, see sanitizer_$tool.log)"
  done
else
  echo "compute-sanitizer not found: skipped"
fi

step "5. benchmarks: validate, then time"
rm -f "$LOG/bench.csv"
if [ -x "$BENCH" ]; then
  for p in bert-base gpt2 llama-7b additive; do
    reps=20
    [ "$p" = llama-7b ] && reps=10
    t=$(cap 90)
    skip_if_late "$t" "bench $p" || continue
    timeout "$t" "$BENCH" --preset "$p" --backward --repeats "$reps" --csv "$LOG/bench.csv" || fail "bench $p (exit $?)"
  done
  t=$(cap 45)
  if skip_if_late "$t" "bench llama-7b bf16"; then
    timeout "$t" "$BENCH" --preset llama-7b --versions 4,5 --precision bf16 --no-baseline --repeats 10 \
      --csv "$LOG/bench.csv" || fail "bench llama-7b bf16 (exit $?)"
  fi
fi

step "6. PyTorch SDPA"
rm -f "$LOG/torch.csv"
t=$(cap 90)
if [ "$t" -eq 0 ]; then
  echo "!! skipped (time budget of $BUDGET s spent): PyTorch SDPA"
elif timeout 40 python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
  PYTHONUNBUFFERED=1 timeout "$(cap 90)" python3 - "$LOG/torch.csv" << 'PY' || fail "torch SDPA"
import sys, torch
import torch.nn.functional as F
out = open(sys.argv[1], "w")
presets = {"bert-base": (12, 512, 64, False), "gpt2": (12, 1024, 64, True), "llama-7b": (32, 4096, 128, True)}
for name, (H, L, d, causal) in presets.items():
    pairs = L * (L + 1) / 2 if causal else L * L
    flops = H * pairs * 4 * d
    for dt, tag in ((torch.float16, "fp16"), (torch.bfloat16, "bf16"), (torch.float32, "fp32")):
        g = torch.Generator(device="cuda").manual_seed(1)
        q, k, v = (torch.randn(1, H, L, d, device="cuda", dtype=dt, generator=g) for _ in range(3))
        for _ in range(3):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.cuda.synchronize()
        ts = []
        for _ in range(20):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); F.scaled_dot_product_attention(q, k, v, is_causal=causal); b.record(); b.synchronize()
            ts.append(a.elapsed_time(b))
        ms = sorted(ts)[len(ts) // 2]
        print(f"{name:10s} PyTorch {torch.__version__} SDPA {tag}: {ms:.4f} ms, {flops / ms / 1e9:.1f} TFLOP/s")
        out.write(f'{name},"PyTorch SDPA",{tag},{ms},{flops / ms / 1e9},0,ok,"torch {torch.__version__}"\n')
PY
else
  echo "PyTorch with CUDA not available: skipped"
fi

step "7. table"
python3 - "$LOG" << 'PY' | tee "$LOG/table.md"
import csv, os, sys
log = sys.argv[1]
rows = []
for f in ("bench.csv", "torch.csv"):
    p = os.path.join(log, f)
    if os.path.exists(p):
        rows += list(csv.reader(open(p)))
presets = ["bert-base", "gpt2", "llama-7b", "additive"]
impls = []
cell = {}
for r in rows:
    preset, impl, prec, ms, tf, err, ok, note = (r + [""] * 8)[:8]
    key = f"{impl} ({prec})"
    if key not in impls:
        impls.append(key)
    ms = float(ms) if ms else -1
    cell[(key, preset)] = (f"{ms:.3f} ms, {float(tf):.1f} TF/s" if ms > 0 else ("n/a" if note else "-")) + ("" if ok == "ok" or not ms > 0 else " FAILED")
print("| implementation | " + " | ".join(presets) + " |")
print("|---|" + "---|" * len(presets))
for k in impls:
    print(f"| {k} | " + " | ".join(cell.get((k, p), "-") for p in presets) + " |")
PY

step "done in $((SECONDS - T0)) s, status $status (logs: $LOG)"
exit $status
