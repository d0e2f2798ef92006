#!/usr/bin/env bash
# build-widget.sh — the <qk-scope> widget's two distributions:
#   1. wasm/dist/widget/qkscope_widget.{mjs,wasm}   cmake target qkscope_widget (forward-only core)
#   2. dist/widget/esm/{index,define}.js + qkscope_widget.{mjs,wasm} + types/   npm ES modules
#   3. dist/widget/qk-scope.js                       self-contained classic script (wasm inlined)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export NODE_PATH=/usr/share/nodejs   # em++ links at -O1+ need node-acorn (docs/toolchain.md)

# Configure the first time, and again if the build folder predates the qkscope_widget target.
if [[ ! -f build/wasm/CMakeCache.txt ]] || ! grep -q qkscope_widget build/wasm/Makefile; then
  cmake --preset wasm
fi
cmake --build --preset wasm --target qkscope_widget
vite=node_modules/.bin/vite
"$vite" build --config web/widget.vite.config.ts --mode esm --logLevel warn
cp wasm/dist/widget/qkscope_widget.mjs wasm/dist/widget/qkscope_widget.wasm dist/widget/esm/
node_modules/.bin/tsc -p web/widget.tsconfig.json
mkdir -p dist/widget/types/wasm/types && cp wasm/qkscope.d.ts dist/widget/types/wasm/qkscope.d.ts &&
  cp wasm/types/*.d.ts dist/widget/types/wasm/types/
# tsc keeps the '@qkscope/wasm' alias in declarations; npm consumers need the relative path.
# It also keeps extensionless relative specifiers, which moduleResolution node16/nodenext
# rejects (TS2834); './x.js' resolves to ./x.d.ts under node16, nodenext and bundler alike.
find dist/widget/types -name '*.d.ts' -exec sed -i -E \
  -e "s#'@qkscope/wasm'#'../../../wasm/qkscope.js'#g" \
  -e "s#((from |import\()'\.{1,2}/[^']*)'#\1.js'#g" -e "s#\.js\.js'#.js'#g" {} +
"$vite" build --config web/widget.vite.config.ts --mode standalone --logLevel warn
raw=$(stat -c%s dist/widget/qk-scope.js)
gz=$(gzip -9c dist/widget/qk-scope.js | wc -c)
echo "build-widget: dist/widget/qk-scope.js ${raw} B, ${gz} B gzipped; dist/widget/esm/ for npm"
