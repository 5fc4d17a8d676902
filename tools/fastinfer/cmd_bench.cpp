// `fastinfer bench <routine>`: the benchmark routines of bench/ (the same code fastinfer_bench
// runs), a table on screen and JSON in a file.
#include <cstdio>
#include <fstream>

#include "commands.h"
#include "fastinfer/device.h"
#include "harness.h"
#include "routines.h"

namespace fastinfer::cli {

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Benchmark an op on the GPU (table on screen, JSON to a file)");
  static std::string routine, json_path;
  static bench::BenchOptions options;
  std::string names;
  for (const bench::Routine& r : bench::routines()) names += (names.empty() ? "" : ", ") + r.name;
  cmd->add_option("routine", routine, "One of: " + names)->required();
  cmd->add_option("--json", json_path, "Write the results to this file");
  cmd->add_flag("--quick", options.quick, "Fewer shapes and repetitions");
  cmd->add_option("--shapes", options.only_shapes, "Only shapes whose label contains this text");
  cmd->callback([] {
    if (cuda_device_count() == 0) {
      std::fprintf(stderr, "fastinfer bench: no CUDA device; benchmarks need a GPU\n");
      throw CLI::RuntimeError(1);
    }
    for (const bench::Routine& r : bench::routines()) {
      if (r.name != routine) continue;
      nlohmann::json result = r.run(options);
      result["environment"] = bench::environment_json();
      if (!json_path.empty()) std::ofstream(json_path) << result.dump(2) << "\n";
      return;
    }
    std::fprintf(stderr, "fastinfer bench: no routine named '%s'\n", routine.c_str());
    throw CLI::RuntimeError(2);
  });
}

}  // namespace fastinfer::cli
