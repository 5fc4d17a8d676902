#pragma once
// Each subcommand of the `fastinfer` program registers itself on the CLI11 app.
#include <CLI/CLI.hpp>

namespace fastinfer::cli {

void add_info_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_tune_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_check_command(CLI::App& app);
void add_plot_command(CLI::App& app);

}  // namespace fastinfer::cli
