#!/usr/bin/env bash
# Builds everything (kernels included) and runs every test. Without a GPU the GPU tests are
# skipped with a visible count; with one (the H200 machine) they run too.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${FASTINFER_BUILD_DIR:-build}
scripts/setup.sh "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"

if "$BUILD_DIR/tools/fastinfer" info --has-gpu; then
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)"
else
  skipped=$(ctest --test-dir "$BUILD_DIR" -N -L gpu | sed -n 's/^Total Tests: //p')
  echo "no CUDA device: ${skipped:-0} GPU tests skipped"
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" -LE gpu
fi

# The Python package (built into $BUILD_DIR/python): CPU tests here, GPU ones too where a GPU is.
PYTHON=${FASTINFER_PYTHON:-.deps/venv/bin/python}
if [[ -f "$BUILD_DIR/python/fastinfer/__init__.py" ]]; then
  PYTHONPATH="$PWD/$BUILD_DIR/python" "$PYTHON" -m pytest -q python/tests
else
  echo "python binding not built: skipping python/tests" >&2
  [[ -z "${CI:-}" ]] || exit 1
fi

# find_package consumer: install into the build tree and build a separate project against it.
cmake --install "$BUILD_DIR" --prefix "$BUILD_DIR/install" >/dev/null
cmake -S tests/consumer -B "$BUILD_DIR/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$PWD/$BUILD_DIR/install" >/dev/null
cmake --build "$BUILD_DIR/consumer" >/dev/null
"$BUILD_DIR/consumer/consumer"
"$BUILD_DIR/consumer/quickstart"
