// The registry of ops `fastinfer tune --op NAME` can tune.
#include <algorithm>
#include <map>
#include <mutex>

#include "fastinfer/error.h"
#include "fastinfer/tune.h"

namespace fastinfer::tune {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<const TunableOp>, std::less<>> ops;  // stable addresses
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void register_tunable_op(TunableOp op) {
  if (op.name.empty() || !op.make)
    throw Error(Error::Kind::kValue, "tune::register_tunable_op: op must have a name and a factory, got name '" + op.name + "'");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.ops.contains(op.name))
    throw Error(Error::Kind::kValue, "tune::register_tunable_op: op '" + op.name + "' is already registered");
  std::string name = op.name;
  r.ops.emplace(std::move(name), std::make_unique<const TunableOp>(std::move(op)));
}

const TunableOp* find_tunable_op(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.ops.find(name);
  return it == r.ops.end() ? nullptr : it->second.get();
}

std::vector<std::string> tunable_op_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, op] : r.ops) names.push_back(name);
  return names;
}

}  // namespace fastinfer::tune
