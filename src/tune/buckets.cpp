// Bucket lists and the mapping of M to a bucket.
#include <algorithm>
#include <cstdio>

#include "fastinfer/tune.h"
#include "runtime/check.h"
#include "tune/hash.h"

namespace fastinfer::tune {

struct BucketMapper::Table {
  std::vector<std::int64_t> buckets;
  Rounding rounding = Rounding::kUp;
  bool is_default = false;
  std::uint64_t id = 0;
  std::string description;
};

namespace {

constexpr std::int64_t kLargestDefaultBucket = std::int64_t{1} << 24;  // 16M tokens: beyond any batch

std::string list_text(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::shared_ptr<const BucketMapper::Table> make_table(std::vector<std::int64_t> buckets, Rounding rounding) {
  if (buckets.empty()) check::fail("tune::Scope", "buckets", "be a non-empty list of sizes >= 1", "[]");
  std::sort(buckets.begin(), buckets.end());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  if (buckets.front() < 1) check::fail("tune::Scope", "buckets", "hold sizes >= 1", list_text(buckets));
  auto t = std::make_shared<BucketMapper::Table>();
  t->is_default = buckets == default_buckets();
  t->buckets = std::move(buckets);
  t->rounding = rounding;
  std::uint64_t h = detail::fnv1a(detail::kFnvOffset, rounding == Rounding::kUp ? "up" : "down");
  for (std::int64_t b : t->buckets) h = detail::fnv1a(h, b);
  t->id = h;
  t->description = (t->is_default ? std::string("default") : list_text(t->buckets)) +
                   (rounding == Rounding::kUp ? "/up" : "/down");
  return t;
}

}  // namespace

std::vector<std::int64_t> default_buckets() {
  std::vector<std::int64_t> b;
  for (std::int64_t m = 1; m <= 256; m *= 2) b.push_back(m);
  for (std::int64_t m = 512; m <= 2048; m += 256) b.push_back(m);
  for (std::int64_t m = 2560; m <= 4096; m += 512) b.push_back(m);
  for (std::int64_t m = 8192; m <= kLargestDefaultBucket; m *= 2) b.push_back(m);
  return b;
}

BucketMapper::BucketMapper() {
  static const std::shared_ptr<const Table> kDefault = make_table(default_buckets(), Rounding::kUp);
  table_ = kDefault;
}

BucketMapper::BucketMapper(std::vector<std::int64_t> buckets, Rounding rounding)
    : table_(make_table(std::move(buckets), rounding)) {}

std::int64_t BucketMapper::bucket(std::int64_t m) const noexcept {
  const std::vector<std::int64_t>& b = table_->buckets;
  if (m <= b.front()) return b.front();  // clamped at the ends
  if (m >= b.back()) return b.back();
  auto it = std::lower_bound(b.begin(), b.end(), m);  // first bucket >= m (exists: m < back)
  if (*it == m || table_->rounding == Rounding::kUp) return *it;
  return *(it - 1);  // m > front, so a smaller bucket exists
}

std::span<const std::int64_t> BucketMapper::buckets() const noexcept { return table_->buckets; }
Rounding BucketMapper::rounding() const noexcept { return table_->rounding; }
bool BucketMapper::is_default_list() const noexcept { return table_->is_default; }
std::uint64_t BucketMapper::id() const noexcept { return table_->id; }
const std::string& BucketMapper::describe() const noexcept { return table_->description; }

std::vector<std::int64_t> BucketMapper::keys_up_to(std::int64_t max_m) const {
  std::vector<std::int64_t> keys;
  for (std::int64_t b : table_->buckets)
    if (b <= max_m) keys.push_back(b);
  const std::int64_t top = bucket(max_m);
  if (keys.empty() || keys.back() != top) keys.push_back(top);
  return keys;
}

bool operator==(const BucketMapper& a, const BucketMapper& b) noexcept {
  if (a.table_ == b.table_) return true;
  return a.table_->id == b.table_->id && a.table_->rounding == b.table_->rounding &&
         a.table_->buckets == b.table_->buckets;
}

}  // namespace fastinfer::tune
