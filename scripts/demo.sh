#!/usr/bin/env bash
# Builds the library and the CLI, then runs `fastinfer demo`: GDN prefill, GDN decode and the
# bf16 x NVFP4 GEMM on realistic shapes (GPU when present, else the CPU reference with a notice).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${FASTINFER_BUILD_DIR:-build}
scripts/setup.sh
cmake --build "$BUILD_DIR" -j "$(nproc)" --target fastinfer_cli
"$BUILD_DIR/tools/fastinfer" demo "$@"
