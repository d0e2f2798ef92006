// native/cuda/emu/emu.cpp — the fiber scheduler behind emu.hpp. One OS thread runs a
// launch block by block; inside a block each CUDA thread is a ucontext fiber that runs
// until it reaches a synchronisation point (block barrier or warp collective), then the
// next ready fiber runs. A barrier releases when every live thread of its scope arrived.
#include "emu.hpp"

#include <sys/mman.h>
#include <ucontext.h>

#include <exception>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace qkemu {
namespace {

constexpr std::size_t kStackBytes = 256 * 1024;

enum class State { ready, block_wait, warp_wait, done };

struct Copy {
  void* dst;
  const void* src;
  std::size_t bytes;
  bool valid;
};

struct Fiber {
  ucontext_t ctx{};
  void* stack = nullptr;
  State state = State::ready;
  uint3 tid{};
  int linear = 0;
  std::vector<Copy> open;                 // cp.async copies not yet committed
  std::vector<std::vector<Copy>> groups;  // committed groups, oldest first
};

struct Warp {
  int arrived = 0, alive = 0;
  unsigned gen = 0;
  alignas(16) unsigned char buf[2][32][64];
};

struct Runtime {
  dim3 grid, block;
  uint3 bidx{};
  const std::function<void()>* body = nullptr;
  const char* name = "";
  std::vector<Fiber> fibers;
  std::vector<Warp> warps;
  std::vector<unsigned char> smem;
  int block_arrived = 0, alive = 0;
  Fiber* cur = nullptr;
  ucontext_t sched{};
  std::exception_ptr error;
};

thread_local Runtime* rt = nullptr;
thread_local Stats g_stats;
thread_local Schedule g_schedule = Schedule::lowest_first;

struct Stacks {  // fiber stacks, mapped once per OS thread and reused (untouched pages stay free)
  std::vector<void*> s;
  ~Stacks() {
    for (void* p : s) munmap(p, kStackBytes);
  }
  void* get(std::size_t i) {
    while (s.size() <= i) {
      void* p = mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::runtime_error("qkemu: cannot map a fiber stack");
      s.push_back(p);
    }
    return s[i];
  }
};
thread_local Stacks g_stacks;

[[noreturn]] void fail(const std::string& what) {
  std::ostringstream s;
  s << "CUDA interpreter: kernel " << rt->name << ", block (" << rt->bidx.x << ", " << rt->bidx.y << ", "
    << rt->bidx.z << ")";
  if (rt->cur) s << ", thread (" << rt->cur->tid.x << ", " << rt->cur->tid.y << ", " << rt->cur->tid.z << ")";
  s << ": " << what;
  throw std::runtime_error(s.str());
}

void yield() {
  ++g_stats.switches;
  swapcontext(&rt->cur->ctx, &rt->sched);
}

Runtime& need_rt() {
  if (!rt || !rt->cur) throw std::runtime_error("CUDA interpreter: device function called outside a kernel");
  return *rt;
}

void flush_copies(std::vector<Copy>& g) {
  for (const Copy& c : g) {
    if (c.valid) std::memcpy(c.dst, c.src, c.bytes);
    else std::memset(c.dst, 0, c.bytes);
  }
  g.clear();
}

void entry() {
  Runtime& r = *rt;
  Fiber* f = r.cur;
  try {
    (*r.body)();
    for (auto& g : f->groups) flush_copies(g);  // copies still in flight complete eventually
    flush_copies(f->open);
    f->groups.clear();
    f->state = State::done;
    --r.alive;
    Warp& w = r.warps[std::size_t(f->linear / 32)];
    --w.alive;
    if (r.block_arrived > 0)
      fail("returned while " + std::to_string(r.block_arrived) +
           " threads wait at __syncthreads (barrier not reached by every thread)");
    if (w.arrived > 0)
      fail("returned while " + std::to_string(w.arrived) + " lanes of its warp wait in a warp collective");
  } catch (...) {
    if (!r.error) r.error = std::current_exception();
    f->state = State::done;
  }
  swapcontext(&f->ctx, &r.sched);
}

void run_block(Runtime& r) {
  const int n = int(r.block.x * r.block.y * r.block.z);
  std::fill(r.smem.begin(), r.smem.end(), 0xFF);
  r.fibers.assign(std::size_t(n), Fiber{});
  r.warps.assign(std::size_t((n + 31) / 32), Warp{});
  for (int t = 0; t < n; ++t) ++r.warps[std::size_t(t / 32)].alive;
  r.alive = n;
  r.block_arrived = 0;
  for (int t = 0; t < n; ++t) {
    Fiber& f = r.fibers[std::size_t(t)];
    f.linear = t;
    f.tid = {unsigned(t % int(r.block.x)), unsigned((t / int(r.block.x)) % int(r.block.y)),
             unsigned(t / int(r.block.x * r.block.y))};
    f.stack = g_stacks.get(std::size_t(t));
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = kStackBytes;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, entry, 0);
  }
  const Schedule policy = g_schedule;
  for (std::size_t rr = 0;;) {
    // The next fiber to run: a ready one, chosen by the policy (all of them are legal orders
    // of threads that only meet at barriers and warp collectives).
    Fiber* next = nullptr;
    if (policy == Schedule::round_robin) {
      for (std::size_t k = 0; k < r.fibers.size() && !next; ++k) {
        Fiber& f = r.fibers[(rr + k) % r.fibers.size()];
        if (f.state == State::ready) {
          next = &f;
          rr = (rr + k + 1) % r.fibers.size();
        }
      }
    } else if (policy == Schedule::lowest_first) {
      for (auto& f : r.fibers)
        if (f.state == State::ready) { next = &f; break; }
    } else {
      for (auto it = r.fibers.rbegin(); it != r.fibers.rend(); ++it)
        if (it->state == State::ready) { next = &*it; break; }
    }
    if (next) {
      r.cur = next;
      swapcontext(&r.sched, &next->ctx);
      r.cur = nullptr;
      if (r.error) std::rethrow_exception(r.error);
      continue;
    }
    bool all_done = true;
    for (auto& f : r.fibers) all_done = all_done && f.state == State::done;
    if (all_done) break;
    {
      int at_block = 0, at_warp = 0;
      for (auto& f : r.fibers) {
        at_block += f.state == State::block_wait;
        at_warp += f.state == State::warp_wait;
      }
      r.cur = nullptr;
      fail("deadlock: " + std::to_string(at_block) + " threads wait at __syncthreads and " +
           std::to_string(at_warp) + " in warp collectives, none can proceed (divergent barrier?)");
    }
  }
}

}  // namespace

const uint3& thread_idx() { return need_rt().cur->tid; }
const uint3& block_idx() { return need_rt().bidx; }
const dim3& block_dim() { return need_rt().block; }
const dim3& grid_dim() { return need_rt().grid; }
unsigned char* dynamic_smem() { return need_rt().smem.data(); }
std::size_t dynamic_smem_bytes() { return need_rt().smem.size(); }
int lane_id() { return need_rt().cur->linear % 32; }
Stats& stats() { return g_stats; }
Schedule schedule() { return g_schedule; }
void set_schedule(Schedule s) { g_schedule = s; }

void syncthreads() {
  Runtime& r = need_rt();
  Fiber* f = r.cur;
  if (r.warps[std::size_t(f->linear / 32)].arrived > 0)
    fail("__syncthreads while lanes of the same warp wait in a warp collective");
  ++r.block_arrived;
  if (r.block_arrived == r.alive) {
    for (auto& o : r.fibers)
      if (o.state == State::block_wait) o.state = State::ready;
    r.block_arrived = 0;
    ++g_stats.switches;
    return;
  }
  f->state = State::block_wait;
  yield();
}

const unsigned char* warp_exchange(const void* mine, std::size_t bytes, unsigned mask) {
  Runtime& r = need_rt();
  Fiber* f = r.cur;
  if (mask != 0xffffffffu) fail("warp collective with a partial mask is not interpreted");
  Warp& w = r.warps[std::size_t(f->linear / 32)];
  if (w.alive != 32) fail("warp collective in a warp with " + std::to_string(w.alive) + " live lanes");
  if (bytes > 64) fail("warp exchange of more than 64 bytes");
  const unsigned gen = w.gen;
  if (bytes) std::memcpy(w.buf[gen & 1][f->linear % 32], mine, bytes);
  ++w.arrived;
  if (w.arrived == 32) {
    const int base = (f->linear / 32) * 32;
    for (int l = 0; l < 32; ++l) {
      Fiber& o = r.fibers[std::size_t(base + l)];
      if (o.state == State::warp_wait) o.state = State::ready;
    }
    w.arrived = 0;
    ++w.gen;
  } else {
    f->state = State::warp_wait;
    yield();
  }
  return &w.buf[gen & 1][0][0];
}

void cp_async(void* dst, const void* src, std::size_t bytes, bool valid) {
  Runtime& r = need_rt();
  const auto* d = static_cast<unsigned char*>(dst);
  if (d < r.smem.data() || d + bytes > r.smem.data() + r.smem.size())
    fail("cp.async destination outside the block's dynamic shared memory");
  if ((reinterpret_cast<std::uintptr_t>(dst) % bytes) != 0 ||
      (valid && reinterpret_cast<std::uintptr_t>(src) % bytes) != 0)
    fail("cp.async of " + std::to_string(bytes) + " bytes from/to a misaligned address");
  std::memset(dst, 0xFF, bytes);  // in flight: whoever reads it before it lands sees NaN
  r.cur->open.push_back({dst, src, bytes, valid});
}

void cp_async_commit() {
  Fiber* f = need_rt().cur;
  f->groups.push_back(std::move(f->open));
  f->open.clear();
}

void cp_async_wait(int pending_allowed) {
  Fiber* f = need_rt().cur;
  while (int(f->groups.size()) > pending_allowed) {
    flush_copies(f->groups.front());
    f->groups.erase(f->groups.begin());
  }
}

void launch(dim3 grid, dim3 block, std::size_t smem_bytes, const std::function<void()>& body, const char* name) {
  if (rt) throw std::runtime_error("CUDA interpreter: nested launch");
  const unsigned n = block.x * block.y * block.z;
  if (n == 0 || n > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535)
    throw std::runtime_error(std::string("CUDA interpreter: invalid launch configuration for ") + name);
  if (smem_bytes > kMaxSmem)
    throw std::runtime_error(std::string("CUDA interpreter: ") + name + " asks for " +
                             std::to_string(smem_bytes) + " bytes of shared memory (limit 227 KiB)");
  auto state = std::make_unique<Runtime>();
  Runtime& r = *state;
  r.grid = grid;
  r.block = block;
  r.body = &body;
  r.name = name;
  r.smem.assign(smem_bytes, 0xFF);
  rt = &r;
  ++g_stats.launches;
  try {
    for (unsigned z = 0; z < grid.z; ++z)
      for (unsigned y = 0; y < grid.y; ++y)
        for (unsigned x = 0; x < grid.x; ++x) {
          r.bidx = {x, y, z};
          ++g_stats.blocks;
          run_block(r);
        }
  } catch (...) {
    rt = nullptr;
    throw;
  }
  rt = nullptr;
}

}  // namespace qkemu
