#!/usr/bin/env bash
# Builds the libFuzzer target over the argument validation of every op (fuzz/, no GPU needed) with
# clang (AddressSanitizer + UndefinedBehaviorSanitizer) and runs it.
#   scripts/fuzz.sh [seconds]      default 600; FUZZ_BUILD_DIR (build-fuzz), FUZZ_JOBS (1)
# The corpus persists in $FUZZ_BUILD_DIR/corpus; crash inputs land in $FUZZ_BUILD_DIR/artifacts/
# (replay one: $FUZZ_BUILD_DIR/validation_fuzz <file>). Exit status: 0 when no crash.
# CMake builds the same target with -DFASTINFER_BUILD_FUZZ=ON and CXX=clang++ (fuzz/CMakeLists.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-600}
DIR=${FUZZ_BUILD_DIR:-build-fuzz}
CXX=${FUZZ_CXX:-clang++}
command -v "$CXX" >/dev/null || { echo "fuzz: $CXX not found (Debian: apt-get install clang)" >&2; exit 1; }
mkdir -p "$DIR/corpus" "$DIR/artifacts" "$DIR/include/fastinfer"
# build_info.h without a CMake configure (only the version strings are used).
[[ -f $DIR/include/fastinfer/build_info.h ]] ||
  sed 's/@[A-Za-z_]*@/0/g' src/build_info.h.in >"$DIR/include/fastinfer/build_info.h"
mapfile -t sources < fuzz/sources.txt
echo "fuzz: building $DIR/validation_fuzz"
"$CXX" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iinclude -Isrc -I. -I"$DIR/include" -I/usr/local/cuda/include -I.deps/bundle/include \
  "${sources[@]}" -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -lpthread -o "$DIR/validation_fuzz"
echo "fuzz: running for ${SECONDS_TO_RUN}s"
jobs=()  # parallel workers write fuzz-<n>.log into the current directory: run them inside $DIR
[[ ${FUZZ_JOBS:-1} -gt 1 ]] && jobs=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS")
"$DIR/validation_fuzz" "$DIR/corpus" -artifact_prefix="$DIR/artifacts/" -max_total_time="$SECONDS_TO_RUN" \
  -max_len=4096 "${jobs[@]}" -print_final_stats=1 2>&1 | tee "$DIR/fuzz.log" |
  grep -E "^#[0-9]+ *(pulse|DONE|INITED)|ERROR|SUMMARY|validation_fuzz:|stat::" || true
if [[ -n $(find "$DIR/artifacts" -type f -newer "$DIR/validation_fuzz") ]]; then
  echo "fuzz: FAILED, inputs in $DIR/artifacts/"; exit 1
fi
echo "fuzz: no crash in ${SECONDS_TO_RUN}s"
