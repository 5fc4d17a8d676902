#pragma once
// The table of benchmark routines. A routine file registers itself with a static
// RoutineRegistration; the driver (bench_main.cpp) and `fastinfer bench` list and run them.
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fastinfer::bench {

struct BenchOptions {
  bool quick = false;        // fewer shapes and repetitions (smoke runs)
  std::string only_shapes;   // optional substring filter on shape labels

  // Whether a shape with this label runs: no filter, or the label contains it.
  bool wants(const std::string& label) const {
    return only_shapes.empty() || label.find(only_shapes) != std::string::npos;
  }
};

struct Routine {
  std::string name;         // "mm_bf16_fp4", "gdn_prefill", ...
  std::string description;
  // Runs the routine, prints a table on stdout and returns the results as JSON.
  std::function<nlohmann::json(const BenchOptions&)> run;
};

const std::vector<Routine>& routines();

struct RoutineRegistration {
  explicit RoutineRegistration(Routine r);
};

}  // namespace fastinfer::bench
