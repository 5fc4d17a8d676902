#include "plot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fastinfer/error.h"

namespace fastinfer::cli {

extern const char* const kPlotScript;

namespace {

// Single-quoted for /bin/sh.
std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string interpreter() {
  if (const char* env = std::getenv("FASTINFER_PYTHON"); env != nullptr && *env != '\0') return env;
#ifdef FASTINFER_CONFIGURED_PYTHON
  if (access(FASTINFER_CONFIGURED_PYTHON, X_OK) == 0) return FASTINFER_CONFIGURED_PYTHON;
#endif
  return "python3";
}

}  // namespace

void plot_bench(const std::string& json_path, const std::string& png_path, const std::string& routine) {
  const std::string command = quoted(interpreter()) + " - " + quoted(json_path) + " " + quoted(png_path) +
                              (routine.empty() ? "" : " " + quoted(routine));
  FILE* pipe = popen(command.c_str(), "w");  // the script goes to python's stdin
  if (pipe == nullptr) throw Error(Error::Kind::kRuntime, "plot: could not start " + interpreter());
  std::fwrite(kPlotScript, 1, std::strlen(kPlotScript), pipe);
  const int status = pclose(pipe);
  if (status != 0)
    throw Error(Error::Kind::kRuntime, "plot: " + interpreter() + " could not draw " + png_path + " from " + json_path +
                                           " (exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                                           "; its message is above)");
}

}  // namespace fastinfer::cli
