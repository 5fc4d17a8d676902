#!/usr/bin/env bash
# The one command for the H200 machine (see docs/DEVELOPING.md): build there with every core
# using the carried .deps/ (CUTLASS headers + offline bundle), run every test (GPU ones included)
# and the benchmarks, and leave logs and JSON under $OUT.
#   device run: carry [".deps/cutlass", ".deps/bundle"], command "scripts/gpu-check.sh [--tests-only|--bench-only] [ctest -R regex]"
#   BENCH_ROUTINE: the benchmark routines (default all; names separated by commas), BENCH_ARGS: e.g. --quick
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export FASTINFER_BUILD_DIR=${FASTINFER_BUILD_DIR:-build-gpu}
MODE=all
case "${1:-}" in --tests-only) MODE=tests; shift ;; --bench-only) MODE=bench; shift ;; esac
FILTER=${1:-}

# $OUT comes back as at most 8 files: build.log, tests.log, bench.json, bench.txt, bench.png.
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
start=$(date +%s)
scripts/setup.sh --offline >"$OUT/build.log" 2>&1 &&
  cmake --build "$FASTINFER_BUILD_DIR" -j "$(nproc)" >>"$OUT/build.log" 2>&1
build_rc=$?
echo "build: rc=$build_rc in $(( $(date +%s) - start )) s"
grep -E "C7510|warning.*spill|error" "$OUT/build.log" | grep -v "0 bytes spill" | head -20
if [[ $build_rc != 0 ]]; then tail -40 "$OUT/build.log"; exit 1; fi

test_rc=0
if [[ $MODE != bench ]]; then
  ctest --test-dir "$FASTINFER_BUILD_DIR" -j 4 --timeout 600 ${FILTER:+-R "$FILTER"} \
    --output-on-failure >"$OUT/tests.log" 2>&1
  test_rc=$?
  grep -E "tests passed|Failed|\*\*\*|Timeout|Exception|SKIP" "$OUT/tests.log" | head -40
  if [[ -f "$FASTINFER_BUILD_DIR/python/fastinfer/__init__.py" && -z "$FILTER" ]]; then
    PYTHONPATH="$PWD/$FASTINFER_BUILD_DIR/python" python3 -m pytest -q python/tests >>"$OUT/tests.log" 2>&1 || test_rc=1
    tail -3 "$OUT/tests.log"
  fi
fi

bench_rc=0
if [[ $MODE != tests ]]; then
  FASTINFER_COMMIT=${FASTINFER_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)} \
    "$FASTINFER_BUILD_DIR/bench/fastinfer_bench" "${BENCH_ROUTINE:-all}" ${BENCH_ARGS:-} --json "$OUT/bench.json" >"$OUT/bench.txt" 2>&1
  bench_rc=$?
  # Python per-call host cost of every op next to the C++ numbers just measured (issue 9).
  if [[ -f "$FASTINFER_BUILD_DIR/python/fastinfer/__init__.py" ]]; then
    PYTHONPATH="$PWD/$FASTINFER_BUILD_DIR/python" python3 python/bench/host_overhead.py --cpp "$OUT/bench.json" \
      --json "$OUT/host_overhead_python.json" >>"$OUT/bench.txt" 2>&1 || echo "gpu-check: python host_overhead failed" >>"$OUT/bench.txt"
    # Where a Python call's host time goes (argument import, stream look-up, wrapper, allocation).
    PYTHONPATH="$PWD/$FASTINFER_BUILD_DIR/python" python3 python/bench/host_breakdown.py >>"$OUT/bench.txt" 2>&1 ||
      echo "gpu-check: python host_breakdown failed" >>"$OUT/bench.txt"
  fi
  cat "$OUT/bench.txt"
  "$FASTINFER_BUILD_DIR/tools/fastinfer" plot "$OUT/bench.json" -o "$OUT/bench.png" || echo "gpu-check: plot failed"
fi
echo "gpu-check: build $build_rc, tests $test_rc, bench $bench_rc"
[[ $test_rc == 0 && $bench_rc == 0 ]]
