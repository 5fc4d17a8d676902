// fastinfer: the command-line front door (info, demo, check, bench, plot, tune).
#include <cstdio>

#include "fastinfer/error.h"
#include "fastinfer/version.h"
#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"fastinfer: GDN prefill/decode and bf16 x NVFP4 GEMM kernels for NVIDIA Hopper"};
  app.set_version_flag("--version", fastinfer::version());
  app.require_subcommand(1);
  fastinfer::cli::add_info_command(app);
  fastinfer::cli::add_demo_command(app);
  fastinfer::cli::add_tune_command(app);
  fastinfer::cli::add_bench_command(app);
  fastinfer::cli::add_check_command(app);
  fastinfer::cli::add_plot_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const fastinfer::Error& e) {
    std::fprintf(stderr, "fastinfer: %s\n", e.what());
    return 1;
  }
  return 0;
}
