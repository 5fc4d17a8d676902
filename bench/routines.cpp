#include "routines.h"

namespace fastinfer::bench {

namespace {
std::vector<Routine>& table() {
  static std::vector<Routine> t;
  return t;
}
}  // namespace

const std::vector<Routine>& routines() { return table(); }

RoutineRegistration::RoutineRegistration(Routine r) { table().push_back(std::move(r)); }

}  // namespace fastinfer::bench
