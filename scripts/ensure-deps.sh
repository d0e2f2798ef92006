#!/usr/bin/env bash
# ensure-deps.sh — make sure the Debian 12 packages and node_modules that qkscope
# needs are present; install what is missing. Idempotent and fast (file checks
# only) when everything is there.
#   root:     apt-get update && apt-get install -y <missing packages>
#   non-root: prints the exact sudo command and exits 1
# Then `npm ci` when node_modules is missing or older than package-lock.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# "<check>|<debian package>": a command name, or an absolute path that must exist.
checks=(
  "cmake|cmake"
  "make|make"
  "g++|g++"
  "em++|emscripten"
  "/usr/include/eigen3/Eigen/Core|libeigen3-dev"
  "/usr/share/eigen3/cmake/Eigen3Config.cmake|libeigen3-dev"
  "/usr/include/catch2/catch.hpp|catch2"
  "/usr/include/nlohmann/json.hpp|nlohmann-json3-dev"
  "clang++|clang"
  "/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a|libclang-rt-14-dev"
  "/usr/bin/chromium|chromium"
  "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc|fonts-noto-cjk"
  "/usr/lib/python3/dist-packages/torch/__init__.py|python3-torch"
  "/usr/share/dictd/devil.dict.dz|dict-devil"
  "valgrind|valgrind"
)

missing=()
for entry in "${checks[@]}"; do
  what=${entry%%|*} pkg=${entry#*|}
  if [[ $what == /* ]]; then [[ -e $what ]] && continue
  else command -v "$what" >/dev/null 2>&1 && continue
  fi
  [[ " ${missing[*]-} " == *" $pkg "* ]] || missing+=("$pkg")
done

# Node.js is not installed from here: Debian 12 ships Node 18, Vite needs >= 20.19.
node_ok=0
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a>20||(a===20&&b>=19)?0:1)' && node_ok=1
fi
if [[ $node_ok == 0 ]]; then
  echo "ensure-deps: Node.js >= 20.19 with npm is required (found: $(node --version 2>/dev/null || echo none)); Debian 12's nodejs (18) is too old — install Node 20.19+ or 22.12+ first" >&2
  exit 1
fi

actions=()
if ((${#missing[@]})); then
  if [[ $(id -u) != 0 ]]; then
    echo "ensure-deps: missing Debian packages; run: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "ensure-deps: installing Debian packages: ${missing[*]}"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
  actions+=("installed ${missing[*]}")
fi

if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  echo "ensure-deps: running npm ci"
  npm ci --no-audit --no-fund
  actions+=("ran npm ci")
fi

if ((${#actions[@]})); then
  echo "ensure-deps: done ($(IFS=';'; echo "${actions[*]}"))"
else
  echo "ensure-deps: all Debian packages and node_modules present"
fi
