// `fastinfer tune`: tune a registered op over its M buckets and merge the results into a cache file
// (`--op NAME --n N --k K --max-m M --cache FILE`), or print a cache file (`--show FILE`).
#include <cmath>
#include <memory>
#include <cstdio>
#include <string>

#include "commands.h"
#include "progress.h"
#include "fastinfer/device.h"
#include "fastinfer/error.h"
#include "fastinfer/tune.h"
#include "runtime/device_guard.h"
#include "tune/cache_file.h"

namespace fastinfer::cli {

namespace {

struct TuneArgs {
  std::string op;
  std::int64_t n = 0, k = 0, max_m = 0;
  std::string cache;
  std::string show;
  bool list = false;
  int device = 0;
  int warmup = 3, repeat = 10;
  int cold_l2_sets = 1;
  bool graph = false;
};

[[noreturn]] void usage_error(const std::string& what) { throw Error(Error::Kind::kValue, "tune: " + what); }

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string ms_text(double ms) {
  if (!std::isfinite(ms)) return "failed";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", ms);
  return buf;
}

void show(const std::string& path) {
  const auto file = tune::read_cache_file(path);
  if (!file) usage_error("cache file " + path + " does not exist");
  const tune::Metadata& m = file->metadata;
  std::printf("%s: %zu entries\n  GPU %s, compute capability %s, CUDA %s, fastinfer %s\n", path.c_str(),
              file->entries.size(), m.gpu_name.empty() ? "?" : m.gpu_name.c_str(),
              m.compute_capability.empty() ? "?" : m.compute_capability.c_str(),
              m.cuda_version.empty() ? "?" : m.cuda_version.c_str(), m.library_version.empty() ? "?" : m.library_version.c_str());
  std::printf("%-14s %-28s %-20s %-18s %10s  %-20s %10s\n", "op", "runner", "extras", "buckets", "bucket", "tactic", "ms");
  for (const tune::Entry& e : file->entries) {
    std::string extras;
    for (std::int64_t x : e.key->extras()) extras += (extras.empty() ? "" : ",") + std::to_string(x);
    std::printf("%-14s %-28s %-20s %-18s %10lld  %-20s %10s\n", e.key->op().c_str(), e.key->identity().c_str(),
                extras.c_str(), e.key->mapper().describe().c_str(), static_cast<long long>(e.bucket),
                (std::to_string(e.tactic) + " " + e.tactic_name).c_str(), ms_text(e.ms).c_str());
  }
}

void tune_op(const TuneArgs& a) {
  const tune::TunableOp* op = tune::find_tunable_op(a.op);
  if (op == nullptr) {
    const auto names = tune::tunable_op_names();
    usage_error("unknown op '" + a.op + "'; tunable ops in this build: " + (names.empty() ? "(none)" : join(names)));
  }
  if (a.n < 1 || a.k < 1 || a.max_m < 1) usage_error("--n, --k and --max-m must be >= 1");
  if (a.cache.empty()) usage_error("--cache FILE is required");
  if (a.cold_l2_sets < 1) usage_error("--cold-l2 must be >= 1");
  if (cuda_device_count() == 0) usage_error("needs a CUDA device (none found)");
  DeviceGuard guard(a.device);
  tune::Tuner& tuner = tune::Tuner::global();
  if (const tune::LoadResult r = tuner.load(a.cache); !r.reason.empty())
    usage_error(r.reason + " (pick another --cache file)");  // it would not be overwritten either

  const tune::TuneRequest request{a.max_m, a.n, a.k, a.device, a.cold_l2_sets};
  std::unique_ptr<tune::TunableRunner> runner = op->make(request);
  const tune::ProfileOptions options{a.warmup, a.repeat, a.cold_l2_sets > 1, a.graph};
  std::fprintf(stderr, "tuning %s (n=%lld, k=%lld) up to M=%lld on %s, buckets %s\n", a.op.c_str(),
               static_cast<long long>(a.n), static_cast<long long>(a.k), static_cast<long long>(a.max_m),
               device_info(a.device).name.c_str(), runner->key().mapper().describe().c_str());
  std::unique_ptr<Progress> bar;
  const auto results = tuner.tune(*runner, a.max_m, nullptr, options,
                                  [&](std::size_t, std::size_t total, const tune::TunedBucket& last) {
                                    if (!bar) bar = std::make_unique<Progress>("tune " + a.op, total);
                                    bar->advance("bucket " + std::to_string(last.bucket) + ": " + ms_text(last.ms) + " ms");
                                  });
  bar.reset();
  tuner.save(a.cache);

  std::printf("%10s %10s  %-24s %10s %12s %8s\n", "bucket", "M", "best tactic", "best ms", "default ms", "speedup");
  for (const tune::TunedBucket& r : results) {
    double default_ms = INFINITY;
    for (auto [tactic, ms] : r.timings)
      if (tactic < 0) default_ms = ms;
    char speedup[16] = "-";
    if (std::isfinite(r.ms) && std::isfinite(default_ms) && r.ms > 0) std::snprintf(speedup, sizeof speedup, "%.2fx", default_ms / r.ms);
    std::printf("%10lld %10lld  %-24s %10s %12s %8s\n", static_cast<long long>(r.bucket), static_cast<long long>(r.m),
                (std::to_string(r.tactic) + " " + runner->tactic_name(r.tactic)).c_str(), ms_text(r.ms).c_str(),
                ms_text(default_ms).c_str(), speedup);
  }
  std::printf("saved %zu buckets to %s\n", results.size(), a.cache.c_str());
}

}  // namespace

void add_tune_command(CLI::App& app) {
  static TuneArgs args;
  auto* cmd = app.add_subcommand("tune", "Tune an op's tactics per M bucket into a cache file, or show a cache file");
  cmd->add_option("--op", args.op, "Registered tunable op (e.g. mm_bf16_fp4)");
  cmd->add_option("--n", args.n, "N (output features)");
  cmd->add_option("--k", args.k, "K (reduction size)");
  cmd->add_option("--max-m", args.max_m, "Tune every bucket up to this M, and M itself");
  cmd->add_option("--cache", args.cache, "Cache file to merge results into (JSON)");
  cmd->add_option("--show", args.show, "Print this cache file and exit");
  cmd->add_flag("--list", args.list, "List the tunable ops of this build");
  cmd->add_option("--device", args.device, "CUDA device ordinal")->capture_default_str();
  cmd->add_option("--warmup", args.warmup, "Warm-up calls per tactic")->capture_default_str();
  cmd->add_option("--repeat", args.repeat, "Timed calls per tactic")->capture_default_str();
  cmd->add_option("--cold-l2", args.cold_l2_sets, "Rotate through this many input sets (cold L2)")->capture_default_str();
  cmd->add_flag("--graph", args.graph, "Time a CUDA graph of the repeated calls");
  cmd->callback([] {
    if (!args.show.empty()) return show(args.show);
    if (args.list) {
      const auto names = tune::tunable_op_names();
      for (const std::string& name : names) std::printf("%-16s %s\n", name.c_str(), tune::find_tunable_op(name)->description.c_str());
      if (names.empty()) std::printf("(no tunable ops registered in this build)\n");
      return;
    }
    if (args.op.empty()) usage_error("give --op NAME (see --list) or --show FILE");
    tune_op(args);
  });
}

}  // namespace fastinfer::cli
