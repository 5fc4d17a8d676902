// The single-source-of-truth property: the bucket a runner computes internally always equals the
// bucket the tuner looks up, whatever scope the op is called from, because runners are cached by a
// configuration that includes the effective mapper. The broken pattern (mapper left out of the
// runner key) is checked too, so this test is known to be able to fail.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "fakes.h"
#include "fastinfer/error.h"
#include "runtime/runner_cache.h"

namespace fastinfer::tune {
namespace {

// A runner that buckets internally (e.g. picks a tile by bucket), built under one mapper.
struct BucketingRunner {
  BucketMapper mapper;
  RunnerKey key;
  std::int64_t internal_bucket(std::int64_t m) const { return mapper.bucket(m); }
};

struct Config {
  std::int64_t n, k;
  std::uint64_t mapper_id;  // 0 in the broken variant
  bool operator==(const Config&) const = default;
};
struct ConfigHash {
  std::size_t operator()(const Config& c) const { return c.n * 31 + c.k * 7 + c.mapper_id; }
};

// The op's dispatch, following tune.h: runner keyed by the effective mapper.
class FakeOp {
 public:
  explicit FakeOp(bool key_by_mapper) : key_by_mapper_(key_by_mapper) {}
  std::shared_ptr<const BucketingRunner> runner(std::int64_t n, std::int64_t k) {
    const BucketMapper& mapper = current_mapper();
    return cache_.get_or_create(Config{n, k, key_by_mapper_ ? mapper.id() : 0}, [&] {
      return std::make_shared<const BucketingRunner>(
          BucketingRunner{mapper, RunnerKey("fake_gemm", "bucketing/v1", {n, k}, mapper)});
    });
  }

 private:
  bool key_by_mapper_;
  RunnerCache<Config, BucketingRunner, ConfigHash> cache_;
};

std::vector<std::int64_t> probe_values() {
  std::vector<std::int64_t> ms;
  for (std::int64_t m = 1; m <= 600; ++m) ms.push_back(m);
  std::mt19937_64 rng(42);
  for (int i = 0; i < 400; ++i) ms.push_back(1 + static_cast<std::int64_t>(rng() % 100000));
  return ms;
}

// Counts (M, scope) probes where the runner's bucket differs from the tuner's, and whether the
// tuner's choose() refused the runner as stale.
struct Divergence {
  int mismatches = 0;
  int stale_errors = 0;
  int probes = 0;
};

void probe(FakeOp& op, Tuner& tuner, Divergence& d) {
  for (std::int64_t m : probe_values()) {
    auto r = op.runner(4096, 4096);
    ++d.probes;
    if (r->internal_bucket(m) != current_mapper().bucket(m)) ++d.mismatches;
    try {
      tuner.choose(r->key, m);
    } catch (const Error&) {
      ++d.stale_errors;
    }
  }
}

void probe_all_scopes(FakeOp& op, Tuner& tuner, Divergence& d) {
  probe(op, tuner, d);
  {
    Scope a({.buckets = std::vector<std::int64_t>{1, 8, 64, 512}});
    probe(op, tuner, d);
    {
      Scope b({.rounding = Rounding::kUp});
      probe(op, tuner, d);
    }
    {
      Scope c({.buckets = std::vector<std::int64_t>{3, 100, 1000}});
      probe(op, tuner, d);
    }
    probe(op, tuner, d);
  }
  {
    Scope e({.rounding = Rounding::kDown});
    probe(op, tuner, d);
  }
  probe(op, tuner, d);
}

TEST(StaleRunner, RunnerBucketAlwaysEqualsTunerBucket) {
  auto tuner = testing::make_tuner();
  FakeOp op(/*key_by_mapper=*/true);
  Divergence d;
  probe_all_scopes(op, *tuner, d);
  std::thread t([&] {  // another thread, other scopes, same runner cache
    Scope s({.buckets = std::vector<std::int64_t>{2, 20, 200}, .rounding = Rounding::kUp});
    probe_all_scopes(op, *tuner, d);
  });
  t.join();
  EXPECT_GT(d.probes, 10000);
  EXPECT_EQ(d.mismatches, 0);
  EXPECT_EQ(d.stale_errors, 0);
}

TEST(StaleRunner, LeavingTheMapperOutOfTheKeyIsCaught) {
  auto tuner = testing::make_tuner();
  FakeOp op(/*key_by_mapper=*/false);
  Divergence d;
  probe_all_scopes(op, *tuner, d);
  EXPECT_GT(d.mismatches, 0);              // the property test sees the bug ...
  EXPECT_GT(d.stale_errors, 0);            // ... and choose() refuses the stale runner
  EXPECT_GE(d.stale_errors, d.mismatches);  // every diverging probe was refused
}

}  // namespace
}  // namespace fastinfer::tune
