#!/usr/bin/env bash
# Runs every GPU test binary under compute-sanitizer (memcheck, racecheck, synccheck) on the GPU
# machine. Expects a build (scripts/gpu-check.sh builds build-gpu/). Logs go to $OUT/sanitize.log.
#   device run: carry [".deps/cutlass", ".deps/bundle"], command "scripts/gpu-check.sh --tests-only && scripts/sanitize.sh"
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
BUILD_DIR=${FASTINFER_BUILD_DIR:-build-gpu}
FILTER=${SANITIZE_GTEST_FILTER:-*}
BINARIES=${SANITIZE_BINARIES:-.}  # regex on the test binary names
mkdir -p "$OUT"
rc=0
for bin in $(find "$BUILD_DIR/tests" -maxdepth 2 -type f -name '*_gpu_tests' | grep -E "$BINARIES" | sort); do
  for tool in memcheck racecheck synccheck; do
    if compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 "$bin" --gtest_filter="$FILTER" \
        >>"$OUT/sanitize.log" 2>&1; then
      echo "sanitize: $(basename "$bin") $tool clean"
    else
      echo "sanitize: $(basename "$bin") $tool FAILED (see sanitize.log)"
      rc=1
    fi
  done
done
exit $rc
