#!/usr/bin/env bash
# Runs GPU test binaries under compute-sanitizer: memcheck (with leak check), racecheck and
# synccheck, on the GPU machine. One log per (binary, tool) under $OUT/sanitize/, one summary
# line per run on stdout ("clean", or the sanitizer's error count and the first messages).
#
#   scripts/sanitize.sh                      every *_gpu_tests binary of $FASTINFER_BUILD_DIR (build-gpu)
#   scripts/sanitize.sh bin1 bin2 ...        these binaries (e.g. copied into .gpubin/)
# Environment:
#   SANITIZE_BINARIES   regex on binary names (default: all)
#   SANITIZE_TOOLS      tools to run (default: "memcheck racecheck synccheck")
#   SANITIZE_GTEST_FILTER            gtest filter for every tool (default: *)
#   SANITIZE_RACECHECK_FILTER        gtest filter for racecheck (default: the table below, else *)
#   SANITIZE_TIMEOUT    seconds per (binary, tool) run (default 900); a timeout is reported, not hidden
#   SANITIZE_GPUS       run the binaries in this many parallel queues, queue i on GPU i (default 1);
#                       binaries that need every GPU (gdn_dist) run afterwards with all of them
#
#   device run: carry [".deps/cutlass", ".deps/bundle"], command "scripts/gpu-check.sh --tests-only && scripts/sanitize.sh"
#   (on the 2-GPU machine: SANITIZE_GPUS=2 scripts/sanitize.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
BUILD_DIR=${FASTINFER_BUILD_DIR:-build-gpu}
TOOLS=${SANITIZE_TOOLS:-memcheck racecheck synccheck}
FILTER=${SANITIZE_GTEST_FILTER:-*}
BINARIES=${SANITIZE_BINARIES:-.}
TIMEOUT=${SANITIZE_TIMEOUT:-900}
LOGS="$OUT/sanitize"
mkdir -p "$LOGS"

# racecheck instruments every shared-memory access: on the big grids it runs for hours. These
# filters keep one representative test per kernel family (shapes still cover every code path the
# sanitizer can see: tails, multiple chunks, GQA/GVA, every tactic family).
racecheck_filter() {
  [[ -n "${SANITIZE_RACECHECK_FILTER:-}" ]] && { echo "$SANITIZE_RACECHECK_FILTER"; return; }
  case "$1" in
    gdn_prefill_gpu_tests) echo "*InPlaceStateAndCheckpoints*:*PersistentCtasOverManyItems*:*ChainedCalls*" ;;
    gdn_cp_gpu_tests) echo "*GraphReplayWithNewInputsEqualsEager*" ;;
    decode_gpu_tests) echo "*EveryTacticMatchesReference*:*GraphCapture*" ;;
    gemm_gpu_tests) echo "DefaultTactics/*" ;;
    gemm_large_m_gpu_tests) echo "*PdlAndGraphReplay*" ;;
    gdn_dist_gpu_tests) echo "GdnDistributedSimulatedGpu.ThreeRanksVarlenPoolCpPath" ;;  # 80 s was not enough with a 2-GPU case too
    stress_gpu_tests) echo "-*" ;;  # the same kernels as graph_gpu_tests; memcheck/synccheck cover the concurrency
    *) echo "$FILTER" ;;
  esac
}

# Tests that cannot pass under a sanitizer: timing assertions (instrumented kernels run many
# times slower). Left out of every run.
TIMING_TESTS="TuneGpu.PicksTheMeasuredFastestAndClearsTheFailure:TuneGpu.GraphTimingAndColdL2RotationAlsoPickTheFastest"
# (the file-reuse test expects the measured fastest tactic, in this process and in a child)
TIMING_TESTS+=":TuneGpu.ReusesTheFileInAnotherProcess:TuneGpu.ChildLoadsTheFileWithoutProfiling"
# Tests that provoke a CUDA API error on purpose (an out-of-memory request, a tactic that cannot
# launch). Left out of the main run and run apart with API-error reports off (memory, race and
# sync errors are still reported there).
API_ERROR_TESTS="WorkspacePoolGpu.GlobalPoolAndPublicReserve"

# Binaries whose CUDA API error reports come from inside a library, not from fastinfer: NCCL
# enables peer access lazily and clears "peer access already enabled" with cudaGetLastError, and
# probes its kernels with cudaFuncGetAttributes (H200, session 3: 20 such reports, every host
# backtrace inside libnccl). Memory, race and sync errors are still reported for them.
LIBRARY_API_ERROR_BINARIES="gdn_dist_gpu_tests"

# "<filter>" minus the patterns in $2 (gtest syntax: POSITIVE[-NEGATIVE]).
without() { [[ $1 == *-* ]] && echo "$1:$2" || echo "$1-$2"; }

if (($#)); then
  bins=("$@")
else
  mapfile -t bins < <(find "$BUILD_DIR/tests" -maxdepth 2 -type f -name '*_gpu_tests' | grep -E "$BINARIES" | sort)
fi

# The stress test's full 8000 calls under memcheck take long; a few hundred per thread still mix
# every op on 32 streams.
export FASTINFER_STRESS_CALLS=${FASTINFER_STRESS_CALLS:-100}
# The graph test's 25 replays per op add nothing under a sanitizer that 2 do not.
export FASTINFER_GRAPH_REPLAYS=${FASTINFER_GRAPH_REPLAYS:-2}

sanitize_binaries() {  # binaries...; returns 1 if any run was not clean
  local rc=0 bin name tool filter extra log start status secs summary why
  for bin in "$@"; do
    name=$(basename "$bin")
    for tool in $TOOLS; do
      filter=$FILTER
      # synccheck flags every NCCL all-gather kernel (ncclDevFunc_AllGather_RING_SIMPLE: "divergent
      # threads at a barrier", H200 session 3) and the aborted context fails every later test, so
      # the dist binary's synccheck runs the simulated-rank tests (all fastinfer kernels, no NCCL).
      [[ $tool == synccheck && $name == gdn_dist_gpu_tests ]] && filter="GdnDistributedSimulatedGpu.*"
      extra=()
      [[ $tool == racecheck ]] && filter=$(racecheck_filter "$name")
      [[ $tool == memcheck ]] && extra=(--leak-check full)
      [[ " $LIBRARY_API_ERROR_BINARIES " == *" $name "* ]] && extra+=(--report-api-errors no)
      [[ $filter == "-*" ]] && { echo "sanitize: $name $tool skipped (filter)"; continue; }
      log="$LOGS/$name.$tool.log"
      start=$(date +%s)
      timeout "$TIMEOUT" compute-sanitizer --tool "$tool" "${extra[@]}" --error-exitcode 99 --print-limit 20 \
        "$bin" --gtest_filter="$(without "$filter" "$TIMING_TESTS:$API_ERROR_TESTS")" --gtest_brief=1 >"$log" 2>&1
      status=$?
      # The deliberate-API-error tests of this binary (if the filter selects any), API reports off.
      if [[ $status == 0 ]] && "$bin" --gtest_list_tests --gtest_filter="$(without "$filter" "$TIMING_TESTS")" 2>/dev/null |
          grep -qE "^  ($(echo "$API_ERROR_TESTS" | sed 's/[^:]*\.//g; s/:/|/g'))"; then
        timeout "$TIMEOUT" compute-sanitizer --tool "$tool" "${extra[@]}" --report-api-errors no --error-exitcode 99 \
          --print-limit 20 "$bin" --gtest_filter="$API_ERROR_TESTS" --gtest_brief=1 >>"$log" 2>&1
        status=$?
      fi
      secs=$(( $(date +%s) - start ))
      summary=$(grep -E "ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
      if [[ $status == 0 ]]; then
        echo "sanitize: $name $tool clean (${secs}s) ${summary}"
      else
        [[ $status == 124 ]] && why="TIMEOUT after ${TIMEOUT}s" || why="FAILED (exit $status)"
        echo "sanitize: $name $tool $why (${secs}s) ${summary}"
        grep -E "^========= (Invalid|Race|Barrier|Program hit|Leaked|Error|Warning|    at)|FAILED|Failure" "$log" | head -12 | sed 's/^/    /'
        rc=1
      fi
    done
  done
  return $rc
}

GPUS=${SANITIZE_GPUS:-1}
if ((GPUS <= 1)); then
  sanitize_binaries "${bins[@]}"
  exit $?
fi
all_gpus=() queues=()
for ((g = 0; g < GPUS; ++g)); do queues[g]=""; done
i=0
for bin in "${bins[@]}"; do
  if [[ $(basename "$bin") == gdn_dist_gpu_tests ]]; then all_gpus+=("$bin"); continue; fi
  queues[i % GPUS]+="$bin "; i=$((i + 1))
done
pids=()
for ((g = 0; g < GPUS; ++g)); do
  # shellcheck disable=SC2086
  (export CUDA_VISIBLE_DEVICES=$g; sanitize_binaries ${queues[g]}) & pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
((${#all_gpus[@]})) && { sanitize_binaries "${all_gpus[@]}" || rc=1; }
exit $rc
