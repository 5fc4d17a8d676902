// tune::Scope: per-thread, nestable overrides. Each scope resolves its effective settings once, when
// it opens, so the hot-path queries are a thread-local pointer read.
#include <algorithm>
#include <cstdio>
#include <mutex>
#include <set>

#include "fastinfer/error.h"
#include "fastinfer/tune.h"

namespace fastinfer::tune {

struct Scope::Frame {
  Frame* parent = nullptr;
  std::optional<std::vector<std::int64_t>> custom_buckets;  // inherited unless set
  std::optional<Rounding> explicit_rounding;                 // inherited unless set
  BucketMapper mapper;                                       // the effective mapper
  bool tune_mode = false;
  std::vector<std::string> skip_ops;
  std::string cache_file;
  bool opened_cache_file = false;  // this scope set cache_file: it saves on close
};

namespace {

thread_local Scope::Frame* tl_innermost = nullptr;

const BucketMapper& default_mapper() {
  static const BucketMapper kDefault;
  return kDefault;
}

// A file is loaded by the first scope that names it: a scope opened per request must not re-read
// (and re-publish) the same file every time.
bool first_open(const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> opened;
  std::lock_guard lock(mutex);
  return opened.insert(path).second;
}

}  // namespace

Scope::Scope(ScopeOptions options) : frame_(std::make_unique<Frame>()) {
  Frame& f = *frame_;
  const Frame* parent = tl_innermost;
  f.parent = tl_innermost;
  f.custom_buckets = options.buckets ? std::move(options.buckets) : (parent ? parent->custom_buckets : std::nullopt);
  f.explicit_rounding = options.rounding ? options.rounding : (parent ? parent->explicit_rounding : std::nullopt);
  if (options.buckets || options.rounding) {
    // Rounding default: up on the default list, down on a custom one (see tune.h).
    const Rounding rounding = f.explicit_rounding.value_or(f.custom_buckets ? Rounding::kDown : Rounding::kUp);
    f.mapper = f.custom_buckets ? BucketMapper(*f.custom_buckets, rounding) : BucketMapper(default_buckets(), rounding);
    if (f.mapper == default_mapper()) f.mapper = default_mapper();  // share the table: same identity anyway
  } else {
    f.mapper = parent ? parent->mapper : default_mapper();
  }
  f.tune_mode = options.tune_mode.value_or(parent ? parent->tune_mode : false);
  f.skip_ops = options.skip_ops ? std::move(*options.skip_ops) : (parent ? parent->skip_ops : std::vector<std::string>{});
  if (options.cache_file) {
    f.cache_file = std::move(*options.cache_file);
    f.opened_cache_file = !f.cache_file.empty();
  } else if (parent) {
    f.cache_file = parent->cache_file;
  }
  if (f.opened_cache_file && first_open(f.cache_file)) {
    const LoadResult r = Tuner::global().load(f.cache_file);
    if (!r.loaded && !r.reason.empty())
      std::fprintf(stderr, "fastinfer tune: not using %s: %s\n", f.cache_file.c_str(), r.reason.c_str());
  }
  tl_innermost = &f;  // last: a constructor that threw leaves the thread's scopes untouched
}

Scope::~Scope() {
  Frame& f = *frame_;
  if (tl_innermost == &f) {
    tl_innermost = f.parent;
  } else {
    std::fprintf(stderr, "fastinfer tune: Scope closed out of order or on another thread\n");
  }
  if (f.opened_cache_file && f.tune_mode && Tuner::global().memory_size() > 0) {
    try {
      Tuner::global().save(f.cache_file);
    } catch (const std::exception& e) {  // a destructor cannot throw: report and go on
      std::fprintf(stderr, "fastinfer tune: cache not saved: %s\n", e.what());
    }
  }
}

const BucketMapper& current_mapper() noexcept {
  return tl_innermost ? tl_innermost->mapper : default_mapper();
}

bool tuning_enabled(std::string_view op) noexcept {
  const Scope::Frame* f = tl_innermost;
  if (f == nullptr || !f->tune_mode) return false;
  return std::find(f->skip_ops.begin(), f->skip_ops.end(), op) == f->skip_ops.end();
}

const std::string& current_cache_file() noexcept {
  static const std::string kNone;
  return tl_innermost ? tl_innermost->cache_file : kNone;
}

}  // namespace fastinfer::tune
