// Tuner: the cache (immutable snapshots published atomically) and the profiling loop. Host-only:
// the GPU part is the injected Profiler.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>

#include "fastinfer/error.h"
#include "fastinfer/tune.h"
#include "tune/cache_file.h"
#include "tune/snapshot.h"

namespace fastinfer::tune {

namespace {

// One mutex around all profiling of the process: two tuners timing kernels at once would measure
// each other.
std::mutex& profiling_mutex() {
  static std::mutex m;
  return m;
}

// Saves of any tuner in this process (the file lock covers other processes).
std::mutex& save_mutex() {
  static std::mutex m;
  return m;
}

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

struct Tuner::State {
  std::unique_ptr<Profiler> profiler;
  std::function<Metadata()> metadata_source;
  std::once_flag metadata_once;
  Metadata metadata;

  std::atomic<const Snapshot*> current{nullptr};
  std::mutex publish_mutex;  // writers only
  // Every snapshot ever published: readers may still hold an old one, so none is freed before
  // the tuner. Publishing is rare (a tuning pass or a file load publishes once).
  std::vector<std::unique_ptr<const Snapshot>> published;
  std::atomic<std::uint64_t> profiles{0};

  void publish(std::vector<Entry> additions) {
    if (additions.empty()) return;
    std::lock_guard lock(publish_mutex);
    std::unique_ptr<const Snapshot> next = Snapshot::merged(current.load(std::memory_order_acquire), std::move(additions));
    current.store(next.get(), std::memory_order_release);
    published.push_back(std::move(next));
  }
};

Tuner::Tuner(std::unique_ptr<Profiler> profiler, std::function<Metadata()> metadata) : state_(std::make_unique<State>()) {
  state_->profiler = std::move(profiler);
  state_->metadata_source = std::move(metadata);
}

Tuner::~Tuner() = default;

Metadata Tuner::metadata() {
  std::call_once(state_->metadata_once, [&] {
    if (state_->metadata_source) state_->metadata = state_->metadata_source();
  });
  return state_->metadata;
}

Choice Tuner::lookup(const RunnerKey& key, std::int64_t bucket) const noexcept {
  const Snapshot* snap = state_->current.load(std::memory_order_acquire);
  if (snap != nullptr) {
    const std::int64_t e = snap->find(key, bucket);
    if (e >= 0) {
      const Entry& entry = snap->entries[static_cast<std::size_t>(e)];
      return {entry.tactic, entry.source};
    }
  }
  return {-1, Source::kDefault};
}

Choice Tuner::choose(const RunnerKey& key, std::int64_t m) const {
  const BucketMapper& effective = current_mapper();
  if (key.mapper().id() != effective.id()) {
    throw Error(Error::Kind::kRuntime, "tune: runner of " + key.op() + " was built under buckets " +
                                           key.mapper().describe() + " but the calling scope's effective buckets are " +
                                           effective.describe() + " (a stale runner: key runners by current_mapper())");
  }
  return lookup(key, key.mapper().bucket(m));
}

void Tuner::insert(const RunnerKey& key, std::int64_t bucket, int tactic, double ms) {
  Entry e;
  e.key = std::make_shared<const RunnerKey>(key);
  e.bucket = bucket;
  e.tactic = tactic;
  e.ms = ms;
  e.source = Source::kMemory;
  e.tactic_name = tactic < 0 ? "default" : std::to_string(tactic);
  std::vector<Entry> one;
  one.push_back(std::move(e));
  state_->publish(std::move(one));
}

namespace {

// Profiles the default and every valid tactic of `runner` at M = m; the strict minimum wins, so
// on a tie the earlier candidate (the default first) stays.
TunedBucket profile_bucket(Profiler& profiler, std::atomic<std::uint64_t>& count, const TunableRunner& runner,
                           std::int64_t bucket, std::int64_t m, Stream stream, const ProfileOptions& options) {
  TunedBucket out;
  out.bucket = bucket;
  out.m = m;
  out.tactic = -1;
  out.ms = kInf;
  const Problem problem{m, 0};
  std::vector<int> candidates{-1};
  for (int t : runner.tactics(problem))
    if (t >= 0 && std::find(candidates.begin(), candidates.end(), t) == candidates.end()) candidates.push_back(t);
  for (int tactic : candidates) {
    double ms = kInf;
    try {
      ms = profiler.measure(runner, problem, tactic, stream, options);
    } catch (const std::exception&) {
      ms = kInf;  // a tactic that throws is a tactic that cannot run here
    }
    ++count;
    if (std::isnan(ms)) ms = kInf;
    out.timings.emplace_back(tactic, ms);
    if (ms < out.ms) {
      out.ms = ms;
      out.tactic = tactic;
    }
  }
  return out;
}

Entry to_entry(const TunableRunner& runner, const TunedBucket& t) {
  Entry e;
  e.key = std::make_shared<const RunnerKey>(runner.key());
  e.bucket = t.bucket;
  e.tactic = t.tactic;
  e.ms = t.ms;
  e.source = Source::kMemory;
  e.tactic_name = runner.tactic_name(t.tactic);
  return e;
}

void check_options(const ProfileOptions& o) {
  if (o.warmup < 0 || o.repeat < 1)
    throw Error(Error::Kind::kValue, "tune: ProfileOptions must have warmup >= 0 and repeat >= 1, got warmup " +
                                         std::to_string(o.warmup) + ", repeat " + std::to_string(o.repeat));
}

}  // namespace

Choice Tuner::tune_one(const TunableRunner& runner, std::int64_t m, Stream stream, const ProfileOptions& options) {
  check_options(options);
  state_->profiler->check_not_capturing(stream);
  const RunnerKey& key = runner.key();
  const std::int64_t bucket = key.mapper().bucket(m);
  std::lock_guard lock(profiling_mutex());
  // Another thread may have tuned this bucket while we waited.
  if (Choice c = lookup(key, bucket); c.source == Source::kMemory) return c;
  TunedBucket t = profile_bucket(*state_->profiler, state_->profiles, runner, bucket, m, stream, options);
  std::vector<Entry> one;
  one.push_back(to_entry(runner, t));
  state_->publish(std::move(one));
  return {t.tactic, Source::kMemory};
}

std::vector<TunedBucket> Tuner::tune(const TunableRunner& runner, std::int64_t max_m, Stream stream,
                                     const ProfileOptions& options, const Progress& progress) {
  if (max_m < 1) throw Error(Error::Kind::kValue, "tune: max_m must be >= 1, got " + std::to_string(max_m));
  check_options(options);
  state_->profiler->check_not_capturing(stream);
  const std::vector<std::int64_t> keys = runner.key().mapper().keys_up_to(max_m);
  std::vector<TunedBucket> results;
  std::vector<Entry> entries;
  {
    std::lock_guard lock(profiling_mutex());
    for (std::int64_t bucket : keys) {
      results.push_back(profile_bucket(*state_->profiler, state_->profiles, runner, bucket, std::min(bucket, max_m),
                                       stream, options));
      entries.push_back(to_entry(runner, results.back()));
      if (progress) progress(results.size(), keys.size(), results.back());
    }
  }
  state_->publish(std::move(entries));
  return results;
}

LoadResult Tuner::load(const std::string& path) {
  LoadResult r;
  std::optional<CacheFileContents> file;
  try {
    file = read_cache_file(path);
  } catch (const Error& e) {
    r.reason = e.what();
    return r;
  }
  if (!file) return r;  // no file yet: nothing to load, nothing to say
  if (std::string why = metadata_mismatch(file->metadata, metadata()); !why.empty()) {
    r.reason = "cache file " + path + " was " + why;
    return r;
  }
  r.loaded = true;
  r.entries = file->entries.size();
  state_->publish(std::move(file->entries));
  return r;
}

void Tuner::save(const std::string& path) {
  Metadata ours = metadata();
  std::lock_guard process_lock(save_mutex());
  CacheFileLock file_lock(path);
  std::optional<CacheFileContents> disk;
  try {
    disk = read_cache_file(path);
  } catch (const Error& e) {
    throw Error(Error::Kind::kRuntime, std::string(e.what()) + "; not overwriting it");
  }
  std::unique_ptr<Snapshot> merged;
  if (disk) {
    if (std::string why = metadata_mismatch(disk->metadata, ours); !why.empty())
      throw Error(Error::Kind::kRuntime, "tune: cache file " + path + " was " + why + "; not overwriting it");
    // Heal: a field this process does not know keeps the file's value; one the file lacks is added.
    for (auto [mine, theirs] : {std::pair{&ours.gpu_name, &disk->metadata.gpu_name},
                                {&ours.compute_capability, &disk->metadata.compute_capability},
                                {&ours.cuda_version, &disk->metadata.cuda_version},
                                {&ours.library_version, &disk->metadata.library_version}})
      if (mine->empty()) *mine = *theirs;
    merged = Snapshot::merged(nullptr, std::move(disk->entries));
  }
  std::vector<Entry> mine;
  if (const Snapshot* snap = state_->current.load(std::memory_order_acquire))
    for (const Entry& e : snap->entries)
      if (e.source == Source::kMemory) mine.push_back(e);
  merged = Snapshot::merged(merged.get(), std::move(mine));  // memory entries replace the file's
  write_cache_file_atomically(path, ours, merged->entries);
}

std::size_t Tuner::size() const noexcept {
  const Snapshot* snap = state_->current.load(std::memory_order_acquire);
  return snap ? snap->entries.size() : 0;
}

std::size_t Tuner::memory_size() const noexcept {
  const Snapshot* snap = state_->current.load(std::memory_order_acquire);
  return snap ? snap->memory_entries : 0;
}

std::uint64_t Tuner::profile_count() const noexcept { return state_->profiles.load(); }

}  // namespace fastinfer::tune
