#pragma once
// A progress line on stderr for commands that run longer than a second (tune, bench, check).
// Drawn only when stderr is a terminal, so logs and CI output stay clean. The line is cleared
// before and the cursor returned to column 0 after each draw, so a table row printed to stdout
// meanwhile overwrites it instead of being appended to it.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

namespace fastinfer::cli {

class Progress {
 public:
  // total == 0: the number of steps is unknown; the line counts steps and seconds instead.
  Progress(std::string title, std::size_t total, std::string unit = "steps")
      : title_(std::move(title)), unit_(std::move(unit)), total_(total), enabled_(isatty(STDERR_FILENO) == 1) {}
  ~Progress() { finish(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(const std::string& note = {}) {
    ++done_;
    if (!enabled_) return;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (total_ > 0) {
      constexpr std::size_t kWidth = 30;
      const std::size_t filled = kWidth * std::min(done_, total_) / total_;
      std::fprintf(stderr, "\033[K%s [%s%s] %zu/%zu %.1fs %s\r", title_.c_str(), std::string(filled, '#').c_str(),
                   std::string(kWidth - filled, '.').c_str(), done_, total_, seconds, note.c_str());
    } else {
      std::fprintf(stderr, "\033[K%s: %zu %s, %.1fs %s\r", title_.c_str(), done_, unit_.c_str(), seconds, note.c_str());
    }
    std::fflush(stderr);
    drawn_ = true;
  }

  // Clears the line (once); called by the destructor too.
  void finish() {
    if (drawn_) std::fprintf(stderr, "\033[K");
    drawn_ = false;
  }

 private:
  std::string title_, unit_;
  std::size_t total_ = 0, done_ = 0;
  bool enabled_ = false, drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace fastinfer::cli
