// fastinfer_bench: runs one, several or all benchmark routines and writes their JSON.
//   fastinfer_bench all --json bench.json    (what scripts/gpu-check.sh runs; one object per routine)
//   fastinfer_bench mm_bf16_fp4 --json out.json [--quick]
//   fastinfer_bench ceilings,gdn_prefill --json out.json   (a comma-separated list)
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "routines.h"

int main(int argc, char** argv) {
  using namespace fastinfer::bench;
  CLI::App app{"fastinfer benchmark driver"};
  std::string which = "all", json_path;
  BenchOptions options;
  app.add_option("routine", which, "Routine name, several separated by commas, or 'all'");
  app.add_option("--json", json_path, "Write the results to this file ({routine: result, environment: ...})");
  app.add_flag("--quick", options.quick, "Fewer shapes and repetitions");
  app.add_option("--shapes", options.only_shapes, "Only shapes whose label contains this text");
  CLI11_PARSE(app, argc, argv);

  std::vector<std::string> wanted;
  std::istringstream names(which);
  for (std::string name; std::getline(names, name, ',');) wanted.push_back(name);
  const auto selected = [&](const std::string& name) {
    for (const std::string& w : wanted) {
      if (w == "all" || w == name) return true;
    }
    return false;
  };

  int ran = 0;
  nlohmann::json results;
  for (const Routine& r : routines()) {
    if (!selected(r.name)) continue;
    ++ran;
    std::printf("== %s: %s\n", r.name.c_str(), r.description.c_str());
    std::fflush(stdout);
    results[r.name] = r.run(options);
    // Written after every routine so a later crash or timeout keeps what was measured.
    results["environment"] = environment_json();
    if (!json_path.empty()) std::ofstream(json_path) << results.dump(2) << "\n";
  }
  if (ran == 0) {
    std::fprintf(stderr, "no routine named '%s'; available:", which.c_str());
    for (const Routine& r : routines()) std::fprintf(stderr, " %s", r.name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  return 0;
}
