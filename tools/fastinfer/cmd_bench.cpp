// `fastinfer bench <routine>`: the benchmark routines of bench/ (the same code fastinfer_bench
// runs), a table on screen, JSON in a file and optionally a plot (time vs case, floor, anchors).
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "commands.h"
#include "fastinfer/device.h"
#include "harness.h"
#include "plot.h"
#include "progress.h"
#include "routines.h"

namespace fastinfer::cli {

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Benchmark an op on the GPU (table on screen, JSON to a file, --plot)");
  static std::string routine, json_path, plot_path;
  static bench::BenchOptions options;
  std::string names;
  for (const bench::Routine& r : bench::routines()) names += (names.empty() ? "" : ", ") + r.name;
  cmd->add_option("routine", routine, "One of: " + names)->required();
  cmd->add_option("--json", json_path, "Write the results to this file");
  cmd->add_option("--plot", plot_path, "Draw time vs case against the floor and the anchors into this PNG");
  cmd->add_flag("--quick", options.quick, "Fewer shapes and repetitions");
  cmd->add_option("--shapes", options.only_shapes, "Only shapes whose label contains this text");
  cmd->callback([] {
    const bench::Routine* chosen = nullptr;
    for (const bench::Routine& r : bench::routines())
      if (r.name == routine) chosen = &r;
    if (chosen == nullptr) {
      std::fprintf(stderr, "fastinfer bench: no routine named '%s'\n", routine.c_str());
      throw CLI::RuntimeError(2);
    }
    if (cuda_device_count() == 0) {
      std::fprintf(stderr, "fastinfer bench: no CUDA device; benchmarks need a GPU\n");
      throw CLI::RuntimeError(1);
    }
    nlohmann::json result;
    {
      Progress progress("bench " + routine, 0, "timings");
      bench::set_measurement_hook([&progress] { progress.advance(); });
      result = chosen->run(options);
      bench::set_measurement_hook({});
    }
    result["environment"] = bench::environment_json();
    std::string json_file = json_path;
    if (json_file.empty() && !plot_path.empty())
      json_file = (std::filesystem::temp_directory_path() / ("fastinfer_bench_" + routine + ".json")).string();
    if (!json_file.empty()) std::ofstream(json_file) << result.dump(2) << "\n";
    if (!plot_path.empty()) plot_bench(json_file, plot_path);
  });
}

}  // namespace fastinfer::cli
