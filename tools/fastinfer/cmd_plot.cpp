// `fastinfer plot BENCH.json -o OUT.png [--routine R]`: draws a benchmark file written by
// `fastinfer bench --json` or `fastinfer_bench all --json` (time vs case, floor, anchors).
#include "commands.h"
#include "plot.h"

namespace fastinfer::cli {

void add_plot_command(CLI::App& app) {
  static std::string json_path, png_path, routine;
  auto* cmd = app.add_subcommand("plot", "Draw a benchmark JSON file as a PNG (time vs case, floor, anchors)");
  cmd->add_option("json", json_path, "Benchmark JSON file")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", png_path, "PNG file to write")->required();
  cmd->add_option("--routine", routine, "Only this routine of a multi-routine file");
  cmd->callback([] { plot_bench(json_path, png_path, routine); });
}

}  // namespace fastinfer::cli
