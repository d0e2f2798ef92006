#!/usr/bin/env bash
# test-valgrind.sh — valgrind's memcheck over the fuzz harness's checks (tests/fuzz/study.cpp,
# no sanitizer: the two do not mix) on the seed corpus, the fixed and the open findings, and
# QKSCOPE_VALGRIND_PER - 1 (default 19) seeded byte mutations of each. AddressSanitizer does
# not see reads of uninitialised memory; memcheck does: an additive tile with no visible key
# read its reference key's tanh before any was written (2026-12-06), and the result of a fuzz
# case then depended on the heap's old contents. Any memcheck report fails the step.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
per=${QKSCOPE_VALGRIND_PER:-20}
out=build/valgrind
mkdir -p "$out"
# -gdwarf-4: valgrind 3.19 cannot read clang 14's DWARF 5 line tables.
if [[ ! -x $out/study || -n $(find core tests/fuzz tests/core "${BASH_SOURCE[0]}" -newer "$out/study" \( -name '*.[ch]pp' -o -name "$(basename "${BASH_SOURCE[0]}")" \) -print -quit) ]]; then
  clang++ -std=c++20 -O1 -g -gdwarf-4 -DQKSCOPE_FUZZ_STUDY -I core/include -I core -I tests/core \
    -isystem /usr/include/eigen3 tests/fuzz/study.cpp -o "$out/study"
fi
rc=0
valgrind -q --error-exitcode=99 --track-origins=yes "$out/study" "$per" tests/fuzz/corpus/fuzz_attention \
  tests/fuzz/fixed tests/fuzz/open >"$out/study.txt" 2>"$out/memcheck.log" || rc=$?
if ((rc == 99)); then
  echo "valgrind: memcheck reports in the fuzz harness's cases; log: $out/memcheck.log" >&2
  head -60 "$out/memcheck.log" >&2
  exit 1
elif ((rc != 0)); then
  echo "valgrind: the study driver failed (exit $rc), not a memcheck report; log: $out/memcheck.log" >&2
  tail -30 "$out/memcheck.log" >&2
  exit 1
fi
echo "valgrind: $(tail -1 "$out/study.txt" | sed 's/^# //') (flagged: the bar's findings, counted, not failures); no memcheck report"
