#!/usr/bin/env bash
# fuzz.sh — run the libFuzzer harnesses (tests/fuzz) for a bounded time, all in parallel,
# starting from the seed corpus in tests/fuzz/corpus/<harness>/ (new inputs go to
# build/fuzz/corpus/<harness>/, outside the repo). Any crash, sanitizer report or property
# violation stops that harness, keeps the input in build/fuzz/artifacts/ and fails the script.
#   scripts/fuzz.sh                    60 s in total (CI: each harness gets the whole time on its own core)
#   scripts/fuzz.sh --minutes 30       a longer campaign
#   scripts/fuzz.sh --seconds 20
#   scripts/fuzz.sh --runs 20000 --seed 1   a fixed, reproducible run (what `npm test` does:
#                                         the same inputs on every machine, so CI is not flaky:
#                                         it starts from the seed corpus alone, and libFuzzer's
#                                         comparison tracing is off, since its table holds
#                                         address-dependent values that changed the mutations
#                                         from run to run; a campaign keeps it)
# Builds the harnesses with the `sanitize` preset (clang, ASan + UBSan) first.
# Prints the executions of each harness and their total.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=60
runs=-1 seed=0
while (($#)); do
  case $1 in
    --minutes) seconds=$(($2 * 60)); shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; seconds=0; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument '$1' (use --minutes N, --seconds N, --runs N, --seed S)" >&2; exit 2 ;;
  esac
done
harnesses=(fuzz_attention fuzz_normalizers fuzz_multihead)
# A fixed run (--runs) is the same run everywhere: a fresh output corpus, no comparison tracing.
fixed_flags=() out=build/fuzz/corpus
if ((runs >= 0)); then
  fixed_flags=(-use_cmp=0 -use_memmem=0)
  out=$(mktemp -d "${TMPDIR:-/tmp}/qkscope-fuzz.XXXXXX")
  trap 'rm -rf "$out"' EXIT
fi
jobs=${QKSCOPE_JOBS:-$(nproc)}
[[ -f build/sanitize/CMakeCache.txt ]] || cmake --preset sanitize >/dev/null
cmake --build --preset sanitize --parallel "$jobs" --target "${harnesses[@]}"

mkdir -p build/fuzz/artifacts
# The inputs of fixed findings (tests/fuzz/fixed/) replay first, each once: a regression gate
# that leaves the random run below as it is (they are not in its seed corpus).
fixed=()
for f in tests/fuzz/fixed/*; do [[ $f == *.md ]] || fixed+=("$f"); done
if ((${#fixed[@]})) && ! build/sanitize/tests/fuzz/fuzz_attention "${fixed[@]}" >build/fuzz/fixed.log 2>&1; then
  echo "fuzz: a fixed finding in tests/fuzz/fixed/ fails again; log:" >&2
  grep -E "Running:|FUZZ FINDING|ERROR|runtime error|SUMMARY" -A3 build/fuzz/fixed.log | head -40 >&2
  exit 1
fi
echo "fuzz: ${#fixed[@]} fixed findings (tests/fuzz/fixed/) replayed, each passes"
pids=()
for h in "${harnesses[@]}"; do
  mkdir -p "$out/$h"
  # -timeout: a single input running past 10 s counts as a hang (a finding).
  build/sanitize/tests/fuzz/$h -max_total_time="$seconds" -runs="$runs" -seed="$seed" "${fixed_flags[@]}" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="build/fuzz/artifacts/$h-" \
    "$out/$h" "tests/fuzz/corpus/$h" >"build/fuzz/$h.log" 2>&1 &
  pids+=($!)
done
status=0 total=0
for k in "${!harnesses[@]}"; do
  h=${harnesses[$k]}
  if ! wait "${pids[$k]}"; then
    status=1
    echo "fuzz: $h FOUND A PROBLEM (input kept in build/fuzz/artifacts/); log:" >&2
    grep -E "FUZZ FINDING|ERROR|runtime error|SUMMARY" -A3 "build/fuzz/$h.log" | head -40 >&2
  fi
  n=$(grep -oP 'stat::number_of_executed_units:\s*\K[0-9]+' "build/fuzz/$h.log" || echo 0)
  rate=$(grep -oP 'stat::average_exec_per_sec:\s*\K[0-9]+' "build/fuzz/$h.log" || echo 0)
  echo "fuzz: $h: $n executions ($rate/s)"
  total=$((total + n))
done
echo "fuzz: $total executions in total, $([[ $status == 0 ]] && echo "no finding" || echo "FINDINGS")"
exit $status
