#pragma once
// Drawing benchmark JSON as a PNG through python3 + matplotlib (the script is plot_bench.py,
// compiled into this program). The interpreter is $FASTINFER_PYTHON, else the one configured at
// build time (scripts/setup.sh's virtual environment carries matplotlib), else `python3`.
#include <string>

namespace fastinfer::cli {

// Throws fastinfer::Error when the plot could not be drawn (no matplotlib, bad JSON, ...).
void plot_bench(const std::string& json_path, const std::string& png_path, const std::string& routine = {});

}  // namespace fastinfer::cli
