// RunnerKey: a runner's cache identity, hashed once when the runner is built.
#include "fastinfer/tune.h"
#include "tune/hash.h"

namespace fastinfer::tune {

RunnerKey::RunnerKey(std::string op, std::string identity, std::vector<std::int64_t> extras, BucketMapper mapper)
    : op_(std::move(op)), identity_(std::move(identity)), extras_(std::move(extras)), mapper_(std::move(mapper)) {
  std::uint64_t h = detail::fnv1a(detail::kFnvOffset, op_);
  h = detail::fnv1a(h, identity_);
  h = detail::fnv1a(h, static_cast<std::int64_t>(extras_.size()));
  for (std::int64_t e : extras_) h = detail::fnv1a(h, e);
  hash_ = detail::fnv1a(h, static_cast<std::int64_t>(mapper_.id()));
}

bool operator==(const RunnerKey& a, const RunnerKey& b) noexcept {
  if (&a == &b) return true;
  return a.hash_ == b.hash_ && a.mapper_.id() == b.mapper_.id() && a.op_ == b.op_ && a.identity_ == b.identity_ &&
         a.extras_ == b.extras_ && a.mapper_ == b.mapper_;
}

std::string TunableRunner::tactic_name(int tactic) const {
  return tactic < 0 ? std::string("default") : std::to_string(tactic);
}

}  // namespace fastinfer::tune
