// The CPU interpreter of the CUDA kernels (native/cuda/emu) reports the bugs it exists to
// catch: a divergent __syncthreads, a thread leaving a block barrier behind, reading a
// cp.async destination before cp.async.wait_group, and it gets warp shuffles right.
// Compiled only into qkscope_cuda_tests (tests/CMakeLists.txt globs tests/core too).
#if defined(QKSCOPE_CUDA_TESTS)
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "emu/emu.hpp"  // last: it defines threadIdx & co.

TEST_CASE("interpreter: divergent __syncthreads is reported as a deadlock or early exit", "[cuda][emu]") {
  const auto divergent = [] {
    if (threadIdx.x < 16) __syncthreads();  // half the block waits forever
  };
  CHECK_THROWS_WITH(qkemu::launch(dim3(1), dim3(64), 0, divergent, "divergent"),
                    Catch::Contains("__syncthreads"));
  const auto fine = [] {
    __syncthreads();
    __syncthreads();
  };
  CHECK_NOTHROW(qkemu::launch(dim3(2), dim3(64), 0, fine, "fine"));
}

TEST_CASE("interpreter: cp.async data lands only at wait_group", "[cuda][emu]") {
  std::vector<float> src(64, 7.f), out(64, 0.f);
  const auto early = [&] {
    float* s = reinterpret_cast<float*>(qkemu::dynamic_smem());
    const int t = int(threadIdx.x);
    if (t < 16) qkemu::cp_async(s + 4 * t, src.data() + 4 * t, 16, true);
    qkemu::cp_async_commit();
    __syncthreads();                     // a barrier does not complete copies
    if (t < 16) out[t] = s[4 * t + 1];   // its own copy, read before its wait: in flight (NaN)
    qkemu::cp_async_wait(0);
  };
  qkemu::launch(dim3(1), dim3(64), 256, early, "early");
  CHECK(std::isnan(out[5]));
  CHECK(std::isnan(out[15]));
  const auto right = [&] {
    float* s = reinterpret_cast<float*>(qkemu::dynamic_smem());
    const int t = int(threadIdx.x);
    if (t < 16) qkemu::cp_async(s + 4 * t, src.data() + 4 * t, 16, true);
    qkemu::cp_async_commit();
    qkemu::cp_async_wait(0);
    __syncthreads();
    out[t] = s[t];
  };
  qkemu::launch(dim3(1), dim3(64), 256, right, "right");
  CHECK(out[5] == 7.f);
}

TEST_CASE("interpreter: shuffles follow the lane rules", "[cuda][emu]") {
  std::vector<int> x(64), y(64), z(64);
  const auto body = [&] {
    const int t = int(threadIdx.x), lane = t % 32;
    x[t] = __shfl_xor_sync(0xffffffffu, lane, 1);         // pairs swap
    y[t] = __shfl_sync(0xffffffffu, lane * 10, 3, 16);    // lane 3 of each 16-lane segment
    int s = lane;
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    z[t] = s;                                            // every lane: 0 + 1 + ... + 31
  };
  qkemu::launch(dim3(1), dim3(64), 0, body, "shuffles");
  CHECK(x[4] == 5);
  CHECK(x[37] == 4);
  CHECK(y[20] == 190);
  CHECK(y[2] == 30);
  CHECK(z[63] == 496);
}
#endif  // QKSCOPE_CUDA_TESTS
