// qkscope/tiled/parallel.hpp — tile options and a tiny fork-join loop over tiles.
//
// Determinism: each tile is computed by exactly one thread, with a fixed order inside
// the tile, and reductions across tiles (bias gradients) are done afterwards in tile
// order. So results are bitwise identical for any thread count; the atomic counter
// only decides *which* thread computes a tile, never *how*.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "qkscope/detail/check.hpp"
#include "qkscope/types.hpp"

namespace qkscope::tiled {

/// Options of the tiled kernels.
struct TiledOptions {
  /// Query rows per tile (>= 1). 64 fits L1/L2 for d <= 128.
  Eigen::Index block_q = 64;
  /// Key rows per tile (>= 1).
  Eigen::Index block_k = 64;
  /// Worker threads; 0 = std::thread::hardware_concurrency(). Results do not depend on it.
  int threads = 0;
};

namespace detail {

inline int resolve_threads(int requested) {
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
  (void)requested;
  return 1;  // no pthreads in this wasm build
#else
  if (requested > 0) return requested;
  const unsigned h = std::thread::hardware_concurrency();
  return h ? int(h) : 1;
#endif
}

inline void check_options(const TiledOptions& o) {
  qkscope::detail::require(o.block_q >= 1 && o.block_k >= 1,
                           "tiled: block_q and block_k must be >= 1, got " +
                               std::to_string(o.block_q) + ", " + std::to_string(o.block_k));
  qkscope::detail::require(o.threads >= 0, "tiled: threads must be >= 0 (0 = hardware), got " +
                                               std::to_string(o.threads));
}

inline Eigen::Index num_tiles(Eigen::Index n, Eigen::Index block) { return (n + block - 1) / block; }

/// Calls fn(tile) for tile in [0, n_tiles) on `threads` threads (the caller is one of them).
/// The first exception thrown by any fn is rethrown here after all threads joined.
template <class Fn>
void parallel_tiles(Eigen::Index n_tiles, int threads, Fn&& fn) {
  threads = int(std::min<Eigen::Index>(threads, n_tiles));
  if (threads <= 1) {
    for (Eigen::Index t = 0; t < n_tiles; ++t) fn(t);
    return;
  }
  std::atomic<Eigen::Index> next{0};
  std::exception_ptr error;
  std::mutex mu;
  auto work = [&] {
    try {
      for (Eigen::Index t; (t = next.fetch_add(1)) < n_tiles;) fn(t);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
      next = n_tiles;
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (int w = 1; w < threads; ++w) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace detail
}  // namespace qkscope::tiled
