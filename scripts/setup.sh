#!/usr/bin/env bash
# Idempotent set-up: Debian packages, the pinned CUTLASS headers, a dependency bundle for the GPU
# machine (which has no package registry), and the CMake configure of build/.
#   scripts/setup.sh            everything (what test.sh and demo.sh call)
#   scripts/setup.sh --offline  no apt/pip: use what .deps/ already holds (the GPU machine)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OFFLINE=0
PYTHON_ARGS=()
[[ "${1:-}" == "--offline" ]] && OFFLINE=1
BUILD_DIR=${FASTINFER_BUILD_DIR:-build}

CUTLASS_VERSION=4.2.0.0
CUTLASS_SHA256=f9599ada45c7bcb6bf53f7d3f0a7d154183e53451c01bfa59eecd37dd4a693f6
DEBIAN_PACKAGES=(cmake ninja-build g++ unzip libgtest-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev libdlpack-dev)

export PATH=/usr/local/cuda/bin:$PATH

if [[ $OFFLINE == 0 ]]; then
  missing=()
  for p in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "setup: installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi

  # CUTLASS/CuTe headers from the pinned wheel (its package carries the C++ headers).
  if [[ ! -f .deps/cutlass/include/cute/tensor.hpp ]]; then
    echo "setup: fetching nvidia-cutlass==$CUTLASS_VERSION headers"
    rm -rf .deps/wheels .deps/cutlass && mkdir -p .deps/wheels
    python3 -m pip download -q --no-deps --only-binary=:all: -d .deps/wheels "nvidia-cutlass==$CUTLASS_VERSION"
    wheel=$(ls .deps/wheels/nvidia_cutlass-$CUTLASS_VERSION-*.whl)
    echo "$CUTLASS_SHA256  $wheel" | sha256sum -c --quiet
    unzip -q "$wheel" 'cutlass_library/source/include/*' 'cutlass_library/source/tools/util/include/*' -d .deps/wheels/x
    mkdir -p .deps/cutlass/tools/util
    mv .deps/wheels/x/cutlass_library/source/include .deps/cutlass/include
    mv .deps/wheels/x/cutlass_library/source/tools/util/include .deps/cutlass/tools/util/include
    rm -rf .deps/wheels
  fi

  # Python tooling for the binding and its tests, pinned, in a private virtual environment.
  # Reinstalled when scripts/python-requirements.txt changes (a copy is kept as the stamp).
  if ! cmp -s scripts/python-requirements.txt .deps/venv/requirements.stamp; then
    echo "setup: installing .deps/venv (nanobind, numpy, pytest, matplotlib; scripts/python-requirements.txt)"
    [[ -x .deps/venv/bin/pip ]] || python3 -m venv .deps/venv
    .deps/venv/bin/pip install -q -r scripts/python-requirements.txt
    cp scripts/python-requirements.txt .deps/venv/requirements.stamp
  fi
  PYTHON_ARGS=(-DPython_EXECUTABLE="$ROOT/.deps/venv/bin/python")

  # Header-only dependencies and GoogleTest sources, copied so the GPU machine can build offline.
  if [[ ! -f .deps/bundle/include/CLI/CLI.hpp ]]; then
    rm -rf .deps/bundle && mkdir -p .deps/bundle/include
    cp -r /usr/include/CLI /usr/include/nlohmann /usr/include/dlpack .deps/bundle/include/
    cp -r /usr/src/googletest .deps/bundle/googletest
  fi

  # pyproject.toml's pinned build requirements as wheels, for an offline `pip install .`
  # (python/check_pip_install.sh with WHEELS=.deps/bundle/python-wheels).
  if [[ ! -f .deps/bundle/python-wheels/stamp ]] || ! grep -qF "$(grep '^requires' pyproject.toml)" .deps/bundle/python-wheels/stamp; then
    rm -rf .deps/bundle/python-wheels
    .deps/venv/bin/pip download -q --only-binary=:all: -d .deps/bundle/python-wheels \
      $(sed -n 's/^requires = \[\(.*\)\]/\1/p' pyproject.toml | tr -d '",') pytest==8.3.5 &&
      grep '^requires' pyproject.toml >.deps/bundle/python-wheels/stamp ||
      echo "setup: could not download the Python build requirements (offline pip install unavailable)" >&2
  fi
fi

[[ -f .deps/cutlass/include/cute/tensor.hpp || -n "${FASTINFER_CUTLASS_DIR:-}" ]] || {
  echo "setup: no CUTLASS headers in .deps/cutlass (run scripts/setup.sh online first)" >&2; exit 1; }

if [[ ! -f $BUILD_DIR/build.ninja ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc -DFASTINFER_DEPS_BUNDLE="$ROOT/.deps/bundle" "${PYTHON_ARGS[@]}" \
    ${FASTINFER_CMAKE_ARGS:-} >/dev/null
fi
echo "setup: ready ($BUILD_DIR)"
