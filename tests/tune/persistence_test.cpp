#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "fakes.h"
#include "fastinfer/error.h"
#include "tune/cache_file.h"

namespace fastinfer::tune {
namespace {

namespace fs = std::filesystem;
using testing::fake_key;
using testing::make_tuner;

class Persistence : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("tune_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "cache.json").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string read(const std::string& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  static nlohmann::json json_of(const std::string& p) { return nlohmann::json::parse(read(p)); }
  std::vector<std::string> stray_files() const {  // anything but the cache and its lock
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      if (name != "cache.json" && name != "cache.json.lock") out.push_back(name);
    }
    return out;
  }
  fs::path dir_;
  std::string path_;
};

TEST_F(Persistence, RoundTripKeepsKeysMappersTacticsAndFailures) {
  const BucketMapper custom({4, 40, 400}, Rounding::kDown);
  const RunnerKey a = fake_key();
  const RunnerKey b = fake_key("fake_gemm", {2, 1024, 512}, custom);
  {
    auto t = make_tuner();
    t->insert(a, 16, 3, 0.25);
    t->insert(b, 40, 1, std::numeric_limits<double>::infinity());
    t->save(path_);
  }
  const nlohmann::json doc = json_of(path_);
  EXPECT_EQ(doc["metadata"]["gpu_name"], "NVIDIA H200");
  EXPECT_EQ(doc["metadata"]["compute_capability"], "9.0");
  EXPECT_EQ(doc["metadata"]["cuda_version"], "13.0");
  EXPECT_EQ(doc["metadata"]["library_version"], "0.1.0");
  EXPECT_EQ(doc["entries"].size(), 2u);

  auto t = make_tuner();
  ASSERT_TRUE(t->load(path_).loaded);
  EXPECT_EQ(t->lookup(a, 16), (Choice{3, Source::kFile}));
  EXPECT_EQ(t->lookup(b, 40), (Choice{1, Source::kFile}));
  EXPECT_EQ(t->lookup(fake_key("fake_gemm", {2, 1024, 512}), 40).source, Source::kDefault);  // other mapper

  const auto contents = read_cache_file(path_);
  ASSERT_TRUE(contents.has_value());
  for (const Entry& e : contents->entries)
    if (e.bucket == 40) EXPECT_TRUE(std::isinf(e.ms));
    else EXPECT_DOUBLE_EQ(e.ms, 0.25);
}

TEST_F(Persistence, SaveMergesWithTheFileOnDisk) {
  const RunnerKey key = fake_key();
  auto first = make_tuner();
  first->insert(key, 1, 1);
  first->insert(key, 2, 2);
  first->save(path_);
  auto second = make_tuner();  // never loaded the file
  second->insert(key, 2, 7);   // newer result for bucket 2
  second->insert(key, 4, 4);
  second->save(path_);
  auto reader = make_tuner();
  ASSERT_TRUE(reader->load(path_).loaded);
  EXPECT_EQ(reader->size(), 3u);
  EXPECT_EQ(reader->lookup(key, 1).tactic, 1);  // kept from the file
  EXPECT_EQ(reader->lookup(key, 2).tactic, 7);  // replaced by the saver's memory
  EXPECT_EQ(reader->lookup(key, 4).tactic, 4);
  EXPECT_TRUE(stray_files().empty());
}

TEST_F(Persistence, ForeignFileIsIgnoredAndNeverOverwritten) {
  auto h100 = make_tuner(nullptr, 2, [] { return Metadata{"NVIDIA H100 80GB HBM3", "9.0", "13.0", "0.1.0"}; });
  h100->insert(fake_key(), 8, 1);
  h100->save(path_);
  const std::string before = read(path_);

  auto h200 = make_tuner();
  const LoadResult r = h200->load(path_);
  EXPECT_FALSE(r.loaded);
  EXPECT_NE(r.reason.find("H100"), std::string::npos) << r.reason;
  EXPECT_EQ(h200->size(), 0u);
  h200->insert(fake_key(), 8, 2);
  EXPECT_THROW(h200->save(path_), Error);
  EXPECT_EQ(read(path_), before);

  for (Metadata other : {Metadata{"NVIDIA H200", "8.0", "13.0", "0.1.0"}, Metadata{"NVIDIA H200", "9.0", "12.8", "0.1.0"},
                         Metadata{"NVIDIA H200", "9.0", "13.0", "0.0.9"}}) {
    auto t = make_tuner(nullptr, 2, [other] { return other; });
    EXPECT_FALSE(t->load(path_).loaded);  // the file says H100: any differing field is foreign
  }
}

TEST_F(Persistence, MissingFieldIsHealedOnSave) {
  auto old = make_tuner(nullptr, 2, [] { return Metadata{"NVIDIA H200", "9.0", "", "0.1.0"}; });  // no CUDA version
  old->insert(fake_key(), 8, 1);
  old->save(path_);
  EXPECT_EQ(json_of(path_)["metadata"]["cuda_version"], "");
  auto t = make_tuner();
  ASSERT_TRUE(t->load(path_).loaded);  // unknown is not a mismatch
  t->insert(fake_key(), 16, 2);
  t->save(path_);
  const nlohmann::json doc = json_of(path_);
  EXPECT_EQ(doc["metadata"]["cuda_version"], "13.0");
  EXPECT_EQ(doc["entries"].size(), 2u);
  // And a field this process does not know keeps the file's value.
  auto blind = make_tuner(nullptr, 2, [] { return Metadata{"", "", "13.0", "0.1.0"}; });
  blind->insert(fake_key(), 32, 3);
  blind->save(path_);
  EXPECT_EQ(json_of(path_)["metadata"]["gpu_name"], "NVIDIA H200");
}

TEST_F(Persistence, UnreadableFileIsNotOverwritten) {
  { std::ofstream(path_) << "{ this is not json"; }
  auto t = make_tuner();
  const LoadResult r = t->load(path_);
  EXPECT_FALSE(r.loaded);
  EXPECT_NE(r.reason.find("not valid JSON"), std::string::npos) << r.reason;
  t->insert(fake_key(), 8, 1);
  EXPECT_THROW(t->save(path_), Error);
  EXPECT_EQ(read(path_), "{ this is not json");
}

TEST_F(Persistence, MissingFileLoadsNothingQuietly) {
  auto t = make_tuner();
  const LoadResult r = t->load(path_);
  EXPECT_FALSE(r.loaded);
  EXPECT_EQ(r.reason, "");
}

TEST_F(Persistence, SaveIntoAMissingDirectoryFailsCleanly) {
  auto t = make_tuner();
  t->insert(fake_key(), 8, 1);
  EXPECT_THROW(t->save((dir_ / "no_such_dir" / "cache.json").string()), Error);
  EXPECT_TRUE(stray_files().empty());
}

// Eight tuners save distinct entries to one file while a reader keeps parsing it: the reader never
// sees a partial file (temp + rename) and the final file holds every entry (merge under the lock).
TEST_F(Persistence, ConcurrentSavesAreAtomicAndLoseNothing) {
  constexpr int kThreads = 8, kRounds = 5;
  std::atomic<bool> done{false};
  std::atomic<int> bad_reads{0}, good_reads{0};
  std::thread reader([&] {
    while (!done) {
      if (!fs::exists(path_)) continue;
      try {
        auto contents = read_cache_file(path_);
        ++good_reads;
      } catch (const Error&) {
        ++bad_reads;
      }
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < kThreads; ++w) {
    writers.emplace_back([&, w] {
      for (int round = 0; round < kRounds; ++round) {
        auto t = make_tuner();
        t->insert(fake_key("op" + std::to_string(w)), 1 + round, w);
        t->save(path_);
      }
    });
  }
  for (auto& t : writers) t.join();
  done = true;
  reader.join();
  EXPECT_EQ(bad_reads.load(), 0);
  EXPECT_GT(good_reads.load(), 0);
  auto t = make_tuner();
  ASSERT_TRUE(t->load(path_).loaded);
  EXPECT_EQ(t->size(), static_cast<std::size_t>(kThreads * kRounds));
  EXPECT_TRUE(stray_files().empty());
}

}  // namespace
}  // namespace fastinfer::tune
