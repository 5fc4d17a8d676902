// fastinfer.autotune(...): a context manager over tune::Scope (per thread, nestable).
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>

#include "bindings.h"
#include "fastinfer/error.h"
#include "fastinfer/tune.h"

namespace nb = nanobind;

namespace fastinfer::python {

namespace {

// Holds the options until __enter__ opens the scope on the calling thread; __exit__ closes it.
class ScopeGuard {
 public:
  explicit ScopeGuard(tune::ScopeOptions options) : options_(std::move(options)) {}
  void enter() {
    if (scope_) throw Error(Error::Kind::kRuntime, "autotune: this scope is already entered");
    scope_ = std::make_unique<tune::Scope>(options_);
  }
  void exit() { scope_.reset(); }

 private:
  tune::ScopeOptions options_;
  std::unique_ptr<tune::Scope> scope_;
};

}  // namespace

void register_tune_bindings(nb::module_& m) {
  nb::class_<ScopeGuard>(m, "_AutotuneScope")
      .def("__enter__", [](ScopeGuard& g) -> ScopeGuard& { g.enter(); return g; }, nb::rv_policy::reference)
      .def("__exit__", [](ScopeGuard& g, nb::handle, nb::handle, nb::handle) { g.exit(); },
           nb::arg().none(), nb::arg().none(), nb::arg().none());
  m.def(
      "autotune",
      [](std::optional<bool> tune_mode, std::optional<std::vector<std::int64_t>> buckets,
         std::optional<bool> round_up, std::optional<std::vector<std::string>> skip_ops,
         std::optional<std::string> cache) {
        tune::ScopeOptions o;
        o.tune_mode = tune_mode;
        o.buckets = std::move(buckets);
        if (round_up) o.rounding = *round_up ? tune::Rounding::kUp : tune::Rounding::kDown;
        o.skip_ops = std::move(skip_ops);
        o.cache_file = std::move(cache);
        return ScopeGuard(std::move(o));
      },
      nb::arg("tune_mode") = nb::none(), nb::arg("buckets") = nb::none(), nb::arg("round_up") = nb::none(),
      nb::arg("skip_ops") = nb::none(), nb::arg("cache") = nb::none(),
      "with fastinfer.autotune(tune_mode=True, cache='tune.json'): ... — a tune::Scope on this thread.");
  m.def("current_bucket", [](std::int64_t m_value) { return tune::current_mapper().bucket(m_value); },
        nb::arg("m"), "The bucket M maps to under this thread's effective mapper.");
}

}  // namespace fastinfer::python
