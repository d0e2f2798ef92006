// qkscope/cpu/parallel.hpp — tile options and a tiny fork-join loop over work items
// (batch x head x query tile in the forward).
//
// Determinism: each item is computed by exactly one thread, with a fixed order inside
// the item, and reductions across items (bias gradients) are done afterwards in item
// order. So results are bitwise identical for any thread count; the atomic counter
// only decides *which* thread computes an item, never *how*.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "qkscope/detail/check.hpp"
#include "qkscope/types.hpp"

namespace qkscope::cpu {

/// Options of the tiled kernels.
struct TiledOptions {
  /// Query rows per tile (>= 1). 64 fits L1/L2 for d <= 128.
  Eigen::Index block_q = 64;
  /// Key rows per block (>= 1). 256 keeps the (64, 256) score block in L1/L2 and makes
  /// the per-row softmax bookkeeping small next to the two GEMMs (NOTES.md, step 1).
  Eigen::Index block_k = 256;
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

/// Calls fn(item, scratch) for item in [0, n_items) on `threads` threads (the caller is one
/// of them); each thread owns one default-constructed Scratch, reused across its items.
/// Items are handed out by an atomic counter, so *which* thread computes an item varies
/// from run to run, but an item's result depends only on the item (the scratch carries no
/// state between items), so results are identical for any thread count.
/// The first exception thrown by any fn is rethrown here after all threads joined.
template <class Scratch, class Fn>
void parallel_items(Eigen::Index n_items, int threads, Fn&& fn) {
  threads = int(std::min<Eigen::Index>(threads, n_items));
  if (threads <= 1) {
    Scratch w;
    for (Eigen::Index t = 0; t < n_items; ++t) fn(t, w);
    return;
  }
  std::atomic<Eigen::Index> next{0};
  std::exception_ptr error;
  std::mutex mu;
  auto work = [&] {
    try {
      Scratch w;
      for (Eigen::Index t; (t = next.fetch_add(1)) < n_items;) fn(t, w);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu);
      if (!error) error = std::current_exception();
      next = n_items;
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
}  // namespace qkscope::cpu
