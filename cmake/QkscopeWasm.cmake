# Emscripten build of the Embind module: wasm/src/*.cpp -> wasm/dist/qkscope_core.{mjs,wasm}.
# Flags follow docs/toolchain.md (Emscripten 3.1.6); NODE_PATH=/usr/share/nodejs must be set
# for the link (the presets and scripts/build-wasm.sh do it).
file(GLOB QKSCOPE_WASM_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/wasm/src/*.cpp)
if(NOT QKSCOPE_WASM_SOURCES)
  message(FATAL_ERROR "qkscope: no Embind sources in wasm/src/*.cpp, nothing to build for wasm")
endif()

add_executable(qkscope_core ${QKSCOPE_WASM_SOURCES})
target_link_libraries(qkscope_core PRIVATE qkscope qkscope_warnings)
target_compile_options(qkscope_core PRIVATE
  -O3                   # never -Os/-Oz with Eigen: no smaller, ~40x slower
  -fwasm-exceptions)    # bindings catch and rethrow real JS errors
target_link_options(qkscope_core PRIVATE
  -O3
  -fwasm-exceptions
  --bind
  -sMODULARIZE=1
  -sEXPORT_ES6=1
  -sEXPORT_NAME=createQkScopeCore
  -sENVIRONMENT=web,worker       # no 'node' with ES6 output in 3.1.6; Node passes wasmBinary
  -sALLOW_MEMORY_GROWTH=1
  -sMAXIMUM_MEMORY=1GB           # past it: std::bad_alloc, catchable, module survives
  -sDYNAMIC_EXECUTION=0          # no new Function/eval: works under strict CSP
  -sFILESYSTEM=0
  -sMALLOC=emmalloc)             # a few matrices per call: ~3 KB gzipped smaller, as fast (NOTES.md)
set_target_properties(qkscope_core PROPERTIES
  SUFFIX ".mjs"
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_SOURCE_DIR}/wasm/dist)
# Make's clean should remove the .wasm written next to the .mjs.
set_property(TARGET qkscope_core APPEND PROPERTY ADDITIONAL_CLEAN_FILES
  ${PROJECT_SOURCE_DIR}/wasm/dist/qkscope_core.wasm)

# ---- tiled module: wasm/tiled/bindings.cpp -> wasm/dist/qkscope_tiled.{mjs,wasm} ----
# The CPU tiled kernels (qkscope/cpu/) behind attention() / attentionBackward(), loaded by
# wasm/qkscope.js on the first fast call, so qkscope_core.wasm stays inside its size budget
# (tests/wasm/size.test.mjs). Eigen's SSE kernels reach wasm SIMD through Emscripten's SSE
# emulation: -msimd128 -msse4.2, no MMX header, and a prelude (eigen_simd_prelude.hpp).
add_executable(qkscope_tiled ${PROJECT_SOURCE_DIR}/wasm/tiled/bindings.cpp)
target_link_libraries(qkscope_tiled PRIVATE qkscope)
target_compile_options(qkscope_tiled PRIVATE
  -O3 -fwasm-exceptions
  -Wall -Wextra -Wno-unused-function  # api.hpp's forward()/backward() are bound by the core module only
  -msimd128 -msse4.2 -D__MMINTRIN_H
  "SHELL:-include ${PROJECT_SOURCE_DIR}/wasm/tiled/eigen_simd_prelude.hpp")
target_link_options(qkscope_tiled PRIVATE
  -O3
  -fwasm-exceptions
  -msimd128
  --bind
  -sMODULARIZE=1
  -sEXPORT_ES6=1
  -sEXPORT_NAME=createQkScopeTiled
  -sENVIRONMENT=web,worker
  -sALLOW_MEMORY_GROWTH=1
  -sMAXIMUM_MEMORY=1GB
  -sMALLOC=emmalloc              # a few scratch buffers per call: the small allocator does (NOTES.md)
  -sDYNAMIC_EXECUTION=0
  -sFILESYSTEM=0)
set_target_properties(qkscope_tiled PROPERTIES
  SUFFIX ".mjs"
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_SOURCE_DIR}/wasm/dist)
set_property(TARGET qkscope_tiled APPEND PROPERTY ADDITIONAL_CLEAN_FILES
  ${PROJECT_SOURCE_DIR}/wasm/dist/qkscope_tiled.wasm)

# ---- training module: wasm/train/bindings.cpp -> wasm/dist/qkscope_train.{mjs,wasm} ----
# The tiny attention model of the core (qkscope/train/) behind createTrainer(), loaded by
# wasm/qkscope.js on the first createTrainer call (the core module keeps its size budget).
# Same SIMD settings as the tiled module: Eigen's GEMMs dominate a training step.
add_executable(qkscope_train_wasm ${PROJECT_SOURCE_DIR}/wasm/train/bindings.cpp)
target_link_libraries(qkscope_train_wasm PRIVATE qkscope)
target_compile_options(qkscope_train_wasm PRIVATE
  -O3 -fwasm-exceptions
  -Wall -Wextra -Wno-unused-function  # api.hpp's bindings are bound by the core module only
  -msimd128 -msse4.2 -D__MMINTRIN_H
  "SHELL:-include ${PROJECT_SOURCE_DIR}/wasm/tiled/eigen_simd_prelude.hpp")
target_link_options(qkscope_train_wasm PRIVATE
  -O3 -fwasm-exceptions -msimd128 --bind
  -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createQkScopeTrain
  -sENVIRONMENT=web,worker -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=1GB
  -sDYNAMIC_EXECUTION=0 -sFILESYSTEM=0)
set_target_properties(qkscope_train_wasm PROPERTIES
  OUTPUT_NAME qkscope_train
  SUFFIX ".mjs"
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_SOURCE_DIR}/wasm/dist)
set_property(TARGET qkscope_train_wasm APPEND PROPERTY ADDITIONAL_CLEAN_FILES
  ${PROJECT_SOURCE_DIR}/wasm/dist/qkscope_train.wasm)

# Test-only: the double reference behind forward()'s option reader, for tests/wasm (never
# shipped; build/wasm/qkscope_reference.{mjs,wasm}). -O2: its loops are small at test sizes.
add_executable(qkscope_reference ${PROJECT_SOURCE_DIR}/tests/wasm/reference/bindings.cpp)
target_link_libraries(qkscope_reference PRIVATE qkscope)
target_include_directories(qkscope_reference PRIVATE ${PROJECT_SOURCE_DIR}/core ${PROJECT_SOURCE_DIR}/tests/core)  # "reference/...", "support/..."
target_compile_options(qkscope_reference PRIVATE -O2 -fwasm-exceptions -Wall -Wextra -Wno-unused-function)
target_link_options(qkscope_reference PRIVATE -O2 -fwasm-exceptions --bind -sMODULARIZE=1 -sEXPORT_ES6=1
  -sEXPORT_NAME=createQkScopeReference -sENVIRONMENT=web,worker -sALLOW_MEMORY_GROWTH=1
  -sDYNAMIC_EXECUTION=0 -sFILESYSTEM=0)
set_target_properties(qkscope_reference PROPERTIES SUFFIX ".mjs")

# Test-only: the wasm SIMD tile products and the tiled kernels at tile shapes the JS API cannot
# reach (1 x 1, odd), with the tiled module's flags; run by tests/wasm/tiled-kernels.test.mjs.
add_executable(qkscope_wasm_kernel_tests ${PROJECT_SOURCE_DIR}/tests/wasm/kernels/tiled_edges.cpp)
target_link_libraries(qkscope_wasm_kernel_tests PRIVATE qkscope qkscope_warnings)
target_include_directories(qkscope_wasm_kernel_tests PRIVATE ${PROJECT_SOURCE_DIR}/core ${PROJECT_SOURCE_DIR}/tests/core)
target_compile_options(qkscope_wasm_kernel_tests PRIVATE -O2 -fwasm-exceptions -msimd128 -msse4.2 -D__MMINTRIN_H
  "SHELL:-include ${PROJECT_SOURCE_DIR}/wasm/tiled/eigen_simd_prelude.hpp")
target_link_options(qkscope_wasm_kernel_tests PRIVATE -O2 -fwasm-exceptions -msimd128 -sENVIRONMENT=node
  -sALLOW_MEMORY_GROWTH=1 -sSINGLE_FILE=1)
set_target_properties(qkscope_wasm_kernel_tests PROPERTIES SUFFIX ".cjs")

# Where the tiled module's forward spends its time (native/bench/NOTES.md); not part of `all`.
add_executable(qkscope_wasm_profile EXCLUDE_FROM_ALL ${PROJECT_SOURCE_DIR}/native/bench/wasm_profile.cpp)
target_link_libraries(qkscope_wasm_profile PRIVATE qkscope qkscope_warnings)
target_compile_options(qkscope_wasm_profile PRIVATE -O3 -fwasm-exceptions -msimd128 -msse4.2 -D__MMINTRIN_H
  "SHELL:-include ${PROJECT_SOURCE_DIR}/wasm/tiled/eigen_simd_prelude.hpp")
target_link_options(qkscope_wasm_profile PRIVATE -O3 -fwasm-exceptions -msimd128 -sENVIRONMENT=node
  -sALLOW_MEMORY_GROWTH=1 -sSINGLE_FILE=1)  # one file: 3.1.6's glue would fetch() a path under Node 20
set_target_properties(qkscope_wasm_profile PROPERTIES SUFFIX ".cjs")  # CommonJS: package.json says "module"

# `ctest --preset wasm` runs the Node tests of the built module.
enable_testing()
find_program(QKSCOPE_NODE NAMES node nodejs REQUIRED)
add_test(NAME wasm_node_tests
  COMMAND /bin/sh -c "\"${QKSCOPE_NODE}\" --test tests/wasm/*.test.mjs"
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})

# ---- widget build: wasm/widget/bindings.cpp -> wasm/dist/widget/qkscope_widget.{mjs,wasm} ----
# The <qk-scope> element's core: forward and the registries only (no backward, no
# initParams), emmalloc, no assertions, so the self-contained script fits its size
# budget (tests/e2e/widget-size.test.mjs). Not part of `all`: `npm run build:widget`
# (scripts/build-widget.sh) builds it with `--target qkscope_widget`.
# Measured (Emscripten 3.1.6; .wasm raw / gzip -9; Node 20 forward() at L=16, d=16):
#   full module -O3   329 KB / 119 KB
#   this target -O3   274 KB / 101 KB   scaled_dot 0.28 ms, additive 0.40 ms
#   this target -O2   260 KB /  97 KB   scaled_dot 0.26 ms, additive 0.35 ms   <- used
#   this target -Oz   227 KB /  94 KB   scaled_dot 0.81 ms, additive 2.62 ms   (3-7x slower)
# -O2 is as fast as -O3 at the widget's sizes (L <= 16) and 4 KB gz smaller.
# Since the core formats numbers with snprintf instead of an ostringstream (no iostreams or
# locales linked): this target -O2 185 KB / 69 KB, qk-scope.js 87 KB gzipped (was 125 KB).
add_executable(qkscope_widget EXCLUDE_FROM_ALL ${PROJECT_SOURCE_DIR}/wasm/widget/bindings.cpp)
target_link_libraries(qkscope_widget PRIVATE qkscope)
target_compile_options(qkscope_widget PRIVATE -O2 -fwasm-exceptions)
target_link_options(qkscope_widget PRIVATE
  -O2
  -fwasm-exceptions
  --bind
  -sMODULARIZE=1
  -sEXPORT_ES6=1
  -sEXPORT_NAME=createQkScopeWidgetCore
  -sENVIRONMENT=web,worker
  -sALLOW_MEMORY_GROWTH=1
  -sMAXIMUM_MEMORY=256MB
  -sDYNAMIC_EXECUTION=0          # strict CSP: no eval / new Function
  -sFILESYSTEM=0
  -sMALLOC=emmalloc              # smaller than dlmalloc; the widget's matrices are tiny
  -sASSERTIONS=0
  -sTEXTDECODER=2                # every browser the widget targets has TextDecoder
  -sSUPPORT_LONGJMP=0)           # nothing calls setjmp
set_target_properties(qkscope_widget PROPERTIES
  SUFFIX ".mjs"
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_SOURCE_DIR}/wasm/dist/widget)
set_property(TARGET qkscope_widget APPEND PROPERTY ADDITIONAL_CLEAN_FILES
  ${PROJECT_SOURCE_DIR}/wasm/dist/widget/qkscope_widget.wasm)
