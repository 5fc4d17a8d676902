#pragma once
// fastinfer::tune — the autotuner: picks a tactic per (runner, M bucket), with per-thread override
// scopes and a persisted JSON cache. Semantics follow flashinfer.autotune, minus its traps.
// Full guide: docs/TUNING.md.
//
// The three pieces an op touches:
//   BucketMapper  maps the dynamic dimension M (tokens) to a bucket. The *effective* mapper of the
//                 calling thread (current_mapper()) is the single source of truth: the cache lookup
//                 and any runner that buckets internally both use it.
//   RunnerKey     a runner's identity for caching: op, configuration text, key extras (dtype, N,
//                 K, flags) AND the mapper it was built under. Build it once, with the runner.
//   Tuner         the cache (memory -> loaded file -> default heuristic) and the profiler.
//
// Intended use in an op (hot path: no allocation, no lock, well under 100 ns for the choice):
//
//   const tune::BucketMapper& mapper = tune::current_mapper();        // thread-local read
//   auto runner = runners.get_or_create(Config{dtype, n, k, mapper.id()},   // mapper in the key
//                                       [&] { return make_runner(dtype, n, k, mapper); });
//   tune::Choice c = tune::Tuner::global().choose(runner->tune_key(), m);  // bucket + lookup
//   if (c.source == tune::Source::kDefault && tune::tuning_enabled(runner->tune_key().op())) {
//     BoundGemm bound(*runner, a, weights, out);                  // a TunableRunner on live inputs
//     c = tune::Tuner::global().tune_one(bound, m, stream);       // tune mode only: profiles
//   }
//   runner->run(params, c.tactic, stream);                        // tactic -1 = runner's default
//
// and, in a test or a serving process:
//
//   { tune::Scope s({.tune_mode = true, .cache_file = "gemm.json"}); warm_up_model(); }  // saves
//   { tune::Scope s({.buckets = std::vector<std::int64_t>{1, 16, 128},
//                    .rounding = tune::Rounding::kUp}); serve(); }
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fastinfer/context.h"

namespace fastinfer::tune {

// ---------------------------------------------------------------------------------------------
// Buckets

enum class Rounding : std::uint8_t {
  kDown,  // M -> the largest bucket <= M (default for a custom bucket list)
  kUp,    // M -> the smallest bucket >= M (default for the default bucket list)
};

// Powers of 2 up to 256, steps of 256 up to 2048, steps of 512 up to 4096, powers of 2 above
// (up to 2^24; larger M clamps to the last bucket).
std::vector<std::int64_t> default_buckets();

// An immutable bucket list plus a rounding rule; M outside the list clamps to its ends. Cheap to
// copy (shared table); bucket() is a binary search over a few dozen values.
class BucketMapper {
 public:
  // The default list, rounding up.
  BucketMapper();
  // Sorted and de-duplicated; throws fastinfer::Error when `buckets` is empty or holds a value < 1.
  BucketMapper(std::vector<std::int64_t> buckets, Rounding rounding);

  std::int64_t bucket(std::int64_t m) const noexcept;
  std::span<const std::int64_t> buckets() const noexcept;
  Rounding rounding() const noexcept;
  bool is_default_list() const noexcept;
  // Deterministic 64-bit fingerprint of (list, rounding): stable across processes, used in keys.
  std::uint64_t id() const noexcept;
  // "default/up" or "[1,16,128]/down": what cache files and `fastinfer tune --show` print.
  const std::string& describe() const noexcept;
  // The bucket keys reachable by some M in [1, max_m]: every bucket <= max_m plus bucket(max_m).
  std::vector<std::int64_t> keys_up_to(std::int64_t max_m) const;

  friend bool operator==(const BucketMapper& a, const BucketMapper& b) noexcept;

  struct Table;  // internal

 private:
  std::shared_ptr<const Table> table_;
};

// ---------------------------------------------------------------------------------------------
// Scopes (RAII, per thread, nestable). Unset fields inherit from the enclosing scope; outside any
// scope: default buckets rounding up, tune mode off, no skipped ops, no cache file.

struct ScopeOptions {
  std::optional<std::vector<std::int64_t>> buckets;  // empty list: error
  // Unset: inherited; if no scope sets it, kUp with the default list and kDown with a custom one.
  std::optional<Rounding> rounding;
  std::optional<bool> tune_mode;                     // profile on a cache miss (ops that support it)
  std::optional<std::vector<std::string>> skip_ops;  // ops never profiled here (lookups still work)
  // Loaded into Tuner::global() when the scope opens (a metadata mismatch is ignored with a note
  // on stderr); on close, if this scope set it and tune mode is on, new entries are merged in.
  std::optional<std::string> cache_file;
};

class Scope {
 public:
  explicit Scope(ScopeOptions options);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  struct Frame;  // the resolved settings of one scope (internal)

 private:
  std::unique_ptr<Frame> frame_;
};

// The effective mapper of the calling thread's innermost scope (a thread-local read). The
// reference stays valid until that scope closes.
const BucketMapper& current_mapper() noexcept;
// Tune mode is on in the innermost scope and `op` is not skipped there.
bool tuning_enabled(std::string_view op) noexcept;
// The cache file of the innermost scope that set one ("" when none).
const std::string& current_cache_file() noexcept;

// ---------------------------------------------------------------------------------------------
// Runners and keys

// A runner's cache identity. `identity` is the runner's full configuration as text (tile config,
// dtypes, flags, kernel family version); `extras` are the shape/dtype values that key the cache
// (dtype code, N, K, flags); `mapper` is the effective mapper the runner was built under.
class RunnerKey {
 public:
  RunnerKey(std::string op, std::string identity, std::vector<std::int64_t> extras, BucketMapper mapper);

  const std::string& op() const noexcept { return op_; }
  const std::string& identity() const noexcept { return identity_; }
  std::span<const std::int64_t> extras() const noexcept { return extras_; }
  const BucketMapper& mapper() const noexcept { return mapper_; }
  std::uint64_t hash() const noexcept { return hash_; }
  friend bool operator==(const RunnerKey& a, const RunnerKey& b) noexcept;

 private:
  std::string op_;
  std::string identity_;
  std::vector<std::int64_t> extras_;
  BucketMapper mapper_;
  std::uint64_t hash_ = 0;
};

struct Problem {
  std::int64_t m = 0;  // the dynamic dimension (tokens; M of a GEMM), <= the bound inputs' M
  int input_set = 0;   // which bound input set to use, in [0, TunableRunner::input_sets())
};

// What the tuner profiles: a runner bound by the op to live (or freshly allocated) inputs.
class TunableRunner {
 public:
  virtual ~TunableRunner() = default;
  virtual const RunnerKey& key() const = 0;
  // Tactic ids (>= 0) valid for `problem`; the default (-1) is always profiled as well.
  virtual std::vector<int> tactics(const Problem& problem) const = 0;
  // Launches `problem` with `tactic` (-1 = the runner's default heuristic) on `stream`. A tactic
  // that cannot run throws or leaves a CUDA error; either way it counts as infinitely slow.
  virtual void run(const Problem& problem, int tactic, Stream stream) const = 0;
  // Input sets the runner can rotate through (> 1 enables cold-L2 profiling).
  virtual int input_sets() const { return 1; }
  // Human-readable tactic name for tables and cache files ("default" for -1).
  virtual std::string tactic_name(int tactic) const;
};

// ---------------------------------------------------------------------------------------------
// The tuner

enum class Source : std::uint8_t { kMemory, kFile, kDefault };

struct Choice {
  int tactic = -1;  // -1: the runner's default heuristic
  Source source = Source::kDefault;
  friend bool operator==(const Choice&, const Choice&) = default;
};

struct ProfileOptions {
  int warmup = 3;
  int repeat = 10;
  bool cold_l2 = false;    // rotate through the runner's input sets between calls
  bool cuda_graph = false; // time a CUDA graph of `repeat` calls instead of `repeat` launches
};

// The file metadata; a definite mismatch of a field present in both makes a file foreign.
struct Metadata {
  std::string gpu_name;
  std::string compute_capability;  // "9.0"
  std::string cuda_version;
  std::string library_version;
  // The facts of `device` (device_info) and this build.
  static Metadata of_device(int device);
};

// Measures one (runner, problem, tactic): milliseconds per call, +inf when the tactic failed (its
// CUDA error cleared). Injectable so the whole tuner is unit-tested without a GPU.
class Profiler {
 public:
  virtual ~Profiler() = default;
  virtual double measure(const TunableRunner& runner, const Problem& problem, int tactic, Stream stream,
                         const ProfileOptions& options) = 0;
  // Throws fastinfer::Error when `stream` is capturing a CUDA graph.
  virtual void check_not_capturing(Stream stream) = 0;
};
std::unique_ptr<Profiler> make_cuda_profiler();  // CUDA events; see src/tune/cuda_profiler.cpp

struct TunedBucket {
  std::int64_t bucket = 0;   // cache key
  std::int64_t m = 0;        // the M profiled for it
  int tactic = -1;           // the winner
  double ms = 0;             // the winner's time (+inf: every tactic failed)
  std::vector<std::pair<int, double>> timings;  // every candidate (tactic, ms)
};

struct LoadResult {
  bool loaded = false;
  std::size_t entries = 0;
  std::string reason;  // why not loaded (missing file, foreign metadata, bad JSON)
};

class Tuner {
 public:
  // `metadata` may be left empty and supplied later (the global tuner reads device 0 lazily).
  Tuner(std::unique_ptr<Profiler> profiler, std::function<Metadata()> metadata);
  ~Tuner();
  Tuner(const Tuner&) = delete;
  Tuner& operator=(const Tuner&) = delete;

  // The process-wide tuner (CUDA profiler, metadata of device 0).
  static Tuner& global();

  // Hot path. Memory, then loaded files, then the default (-1). Lock-free, allocation-free.
  Choice lookup(const RunnerKey& key, std::int64_t bucket) const noexcept;
  // bucket(m) with key.mapper(), then lookup. Throws fastinfer::Error when key.mapper() is not the
  // calling thread's effective mapper (a runner built under another scope: stale).
  Choice choose(const RunnerKey& key, std::int64_t m) const;

  // Profiles bucket(m) at M = m and stores the winner in memory (tune mode, on live inputs).
  Choice tune_one(const TunableRunner& runner, std::int64_t m, Stream stream, const ProfileOptions& options = {});
  // Profiles every bucket key reachable by M in [1, max_m] (BucketMapper::keys_up_to) at
  // M = min(key, max_m); stores the winners in memory and publishes them once.
  using Progress = std::function<void(std::size_t done, std::size_t total, const TunedBucket&)>;
  std::vector<TunedBucket> tune(const TunableRunner& runner, std::int64_t max_m, Stream stream,
                                const ProfileOptions& options = {}, const Progress& progress = {});

  // Stores a result by hand (memory layer).
  void insert(const RunnerKey& key, std::int64_t bucket, int tactic, double ms = 0);
  // Adds the entries of a cache file to the file layer (memory entries keep precedence).
  LoadResult load(const std::string& path);
  // Merges the memory entries into the file (atomic temp + rename). Throws fastinfer::Error when
  // the file on disk is foreign (definite metadata mismatch) or unreadable: it is never overwritten.
  void save(const std::string& path);

  std::size_t size() const noexcept;          // entries (memory + file)
  std::size_t memory_size() const noexcept;   // memory entries
  std::uint64_t profile_count() const noexcept;  // measure() calls so far (tests, CLI)
  Metadata metadata();

  struct Snapshot;  // internal

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// ---------------------------------------------------------------------------------------------
// Tunable-op registry: what `fastinfer tune --op NAME` can tune.
//
// An op registers itself from the translation unit of its public entry (so any program using the
// op links the registration; a static library drops unreferenced objects), e.g. in
// src/gemm/mm_bf16_fp4.cpp:
//
//   const tune::TunableOpRegistration kTunable{{"mm_bf16_fp4", "bf16 x NVFP4 GEMM (N, K)",
//       [](const tune::TuneRequest& r) { return make_bound_gemm_for_tuning(r); }}};
//
// The factory allocates inputs for M = r.max_m (random, never all zeros), builds the runner under
// the calling thread's effective mapper and returns it bound to those inputs.

struct TuneRequest {
  std::int64_t max_m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  int device = 0;
  int input_sets = 1;  // > 1: allocate that many input sets for cold-L2 profiling
};

struct TunableOp {
  std::string name;
  std::string description;
  std::function<std::unique_ptr<TunableRunner>(const TuneRequest&)> make;
};

void register_tunable_op(TunableOp op);                 // a second registration of a name throws
const TunableOp* find_tunable_op(std::string_view name);  // nullptr when unknown
std::vector<std::string> tunable_op_names();            // sorted

struct TunableOpRegistration {
  explicit TunableOpRegistration(TunableOp op) { register_tunable_op(std::move(op)); }
};

}  // namespace fastinfer::tune
