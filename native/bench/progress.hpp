// progress.hpp — qkscope_bench's progress bar: one line on stderr, redrawn in place with '\r',
// only when stderr is a terminal or --progress was given (so logs and pipes stay clean).
//   Progress bar("[3/5] timing", total, enabled);  bar.step();  ...  bar.done();
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace qkscope_bench {

/// Whether to draw: forced by --progress, else only when stderr is a TTY.
inline bool progress_wanted(bool forced) { return forced || isatty(fileno(stderr)) == 1; }

class Progress {
 public:
  Progress(std::string label, long total, bool enabled)
      : label_(std::move(label)), total_(total < 1 ? 1 : total), on_(enabled), t0_(Clock::now()) {
    draw();
  }
  /// One unit of work finished.
  void step() {
    ++done_;
    draw();
  }
  /// Ends the line (the bar stays visible, at 100%).
  void done() {
    if (on_ && !closed_) std::fputc('\n', stderr);
    closed_ = true;
  }
  ~Progress() { done(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

 private:
  using Clock = std::chrono::steady_clock;
  void draw() const {
    if (!on_ || closed_) return;
    constexpr int kWidth = 30;
    const int filled = int(kWidth * done_ / total_);
    const double s = std::chrono::duration<double>(Clock::now() - t0_).count();
    // Remaining time from the mean so far; shown once one unit is done.
    const double eta = done_ > 0 ? s / double(done_) * double(total_ - done_) : -1;
    std::fprintf(stderr, "\r%s [%s%s] %ld/%ld %.1f s", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), done_, total_, s);
    if (eta >= 0 && done_ < total_) std::fprintf(stderr, ", ~%.1f s left ", eta);
    else std::fputs("              ", stderr);
    std::fflush(stderr);
  }
  std::string label_;
  long total_, done_ = 0;
  bool on_, closed_ = false;
  Clock::time_point t0_;
};

}  // namespace qkscope_bench
