#!/usr/bin/env bash
# native/cuda/device_check.sh — the CUDA backend's whole GPU check, one run, < 8 minutes on one
# H200 (a 460 s budget: each step's timeout is the smaller of its own cap and what is left, late
# steps are skipped with a message; when $OUT is set, the console log, table.md and logs.tgz
# with every log land there):
#   1. build Release for sm_90a (qkscope_cuda_tests, then qkscope_cuda_bench), ptxas -v usage
#   2. SASS: tensor-core (HMMA), cp.async (LDGSTS) and ldmatrix (LDSM) instructions per kernel
#   3. qkscope_cuda_tests "[gpu]": every version, score, mask, bias, GQA and the backward
#      against the CPU double reference (2x-of-naive-float32 rule, core/reference/tolerance.hpp)
#   4. compute-sanitizer memcheck and racecheck on one call of each version
#   5. qkscope_cuda_bench: BERT-base, GPT-2, Llama-7B, additive: validate, then time (CUDA events,
#      warm medians) next to a cuBLAS matmul-softmax-matmul baseline in fp32 and fp16
#   6. PyTorch SDPA on the same shapes, when python3 -c 'import torch' sees the GPU: every
#      backend (flash, efficient, cudnn, math) forced in turn, the broadcast additive module,
#      and the copy-bandwidth and bf16-matmul ceilings (device_peers.py)
#   7. one table and the issue's two targets as ratios (device_table.py, table.md)
# Before the first run, on the dev machine: bash native/cuda/device_deps.sh (Eigen, Catch2).
# Device tool: run(command="bash native/cuda/device_check.sh", carry=["build-deps"], timeout_s=540)
# Switches (environment):
#   QKSCOPE_DEVICE_BUDGET_S  the time budget (default 460 s)
#   QKSCOPE_DEVICE_STEPS     steps to run, comma-separated from build,sass,tests,sanitizer,bench,
#                            torch (default: all); the machine and table steps always run
#   QKSCOPE_BENCH_PRESETS    presets of step 5 (default: bert-base gpt2 llama-7b additive)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ROOT=$PWD
LOG=$ROOT/build-device/logs
rm -rf "$LOG"
mkdir -p "$LOG"
# The device tool brings back at most 8 files from $OUT: the console log, the table and one
# archive of every log (refreshed at each step, so a run cut short still returns its logs).
if [ -n "${OUT:-}" ]; then
  exec > >(tee -a "$OUT/device_check.log") 2>&1
  save() { tar czf "$OUT/logs.tgz" -C "$LOG" . 2> /dev/null; [ -f "$LOG/table.md" ] && cp "$LOG/table.md" "$OUT/"; }
else
  exec > >(tee -a "$LOG/device_check.log") 2>&1
  save() { :; }
fi
T0=$SECONDS
BUDGET=${QKSCOPE_DEVICE_BUDGET_S:-460}  # the whole script stays under 8 minutes
STEPS=",${QKSCOPE_DEVICE_STEPS:-build,sass,tests,sanitizer,bench,torch},"
want() { [[ "$STEPS" == *",$1,"* ]]; }
step() { save; echo; echo "== [$((SECONDS - T0)) s] $*"; }
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
date -u
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu --format=csv 2>&1 | head -3
nvcc --version | tail -2
cmake --version | head -1
BUILD=$ROOT/build-device/build
JOBS=$(nproc)

LIB=$BUILD/native/cuda/libqkscope_cuda.a
TESTS=$BUILD/native/cuda/qkscope_cuda_tests
BENCH=$BUILD/native/cuda/qkscope_cuda_bench
if want build; then
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
fi

step "2. SASS: HMMA (tensor cores), LDGSTS (cp.async) and LDSM (ldmatrix) per kernel"
if ! want sass; then
  echo "not asked for: skipped"
elif command -v cuobjdump > /dev/null; then
  cuobjdump -sass "$LIB" 2> /dev/null | awk '/Function :/ {f = $3; n[f] = 1} /HMMA/ {h[f]++} /LDGSTS/ {l[f]++} /LDSM/ {m[f]++}
    END {for (k in n) if (h[k] + l[k] + m[k] > 0) printf "HMMA %5d  LDGSTS %4d  LDSM %4d  %s\n", h[k], l[k], m[k], k}' |
    sed -E 's/_ZN7qkscope4cuda4kern3gpu//' | sort -k7 | tee "$LOG/sass.txt"
  [ -s "$LOG/sass.txt" ] || fail "no HMMA instruction found in libqkscope_cuda.a"
else
  echo "cuobjdump not found: skipped"
fi

step "3. GPU tests against the CPU double reference"
t=$(cap 150)
if ! want tests; then
  echo "not asked for: skipped"
elif skip_if_late "$t" "GPU tests"; then
  timeout "$t" "$TESTS" "[gpu]" --durations yes --use-colour no > "$LOG/tests.log" 2>&1 || fail "qkscope_cuda_tests [gpu] (exit $?)"
fi
[ -f "$LOG/tests.log" ] && grep -E "s: |test cases|All tests|FAILED|no CUDA device" "$LOG/tests.log" | tail -12

step "4. compute-sanitizer memcheck + racecheck (one call of each version)"
if ! want sanitizer; then
  echo "not asked for: skipped"
elif command -v compute-sanitizer > /dev/null; then
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
if want bench && [ -x "$BENCH" ]; then
  for p in ${QKSCOPE_BENCH_PRESETS:-bert-base gpt2 llama-7b additive}; do
    reps=20
    [ "$p" = llama-7b ] && reps=10
    t=$(cap 90)
    skip_if_late "$t" "bench $p" || continue
    timeout "$t" "$BENCH" --preset "$p" --backward --repeats "$reps" --csv "$LOG/bench.csv" || fail "bench $p (exit $?)"
  done
  t=$(cap 45)
  if [[ " ${QKSCOPE_BENCH_PRESETS:-llama-7b} " == *" llama-7b "* ]] && skip_if_late "$t" "bench llama-7b bf16"; then
    timeout "$t" "$BENCH" --preset llama-7b --versions 4,5 --precision bf16 --no-baseline --repeats 10 \
      --csv "$LOG/bench.csv" || fail "bench llama-7b bf16 (exit $?)"
  fi
fi

step "6. PyTorch on the GPU: SDPA (every backend), broadcast additive module, ceilings"
rm -f "$LOG/torch.csv"
t=$(cap 120)
if ! want torch; then
  echo "not asked for: skipped"
elif [ "$t" -eq 0 ]; then
  echo "!! skipped (time budget of $BUDGET s spent): PyTorch"
elif timeout 40 python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
  PYTHONUNBUFFERED=1 timeout "$(cap 120)" python3 native/cuda/device_peers.py "$LOG/torch.csv" || fail "PyTorch peers (exit $?)"
else
  echo "PyTorch with CUDA not available: skipped"
fi

step "7. table and targets"
python3 native/cuda/device_table.py "$LOG" | tee "$LOG/table.md"

step "done in $((SECONDS - T0)) s, status $status (logs: $LOG${OUT:+, archived in \$OUT/logs.tgz})"
save
exit $status
