#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment, then the import and the Python tests against
# the installed package (not the source tree). A manual check, not part of scripts/test.sh: the
# first run compiles the whole library (CUDA kernels included; tens of minutes on a 2-core
# machine), later runs reuse the build folder (pyproject.toml: build-dir) and take about a minute.
#
#   python/check_pip_install.sh                    online: build requirements from PyPI (isolated)
#   PYTHON=python3.12 python/check_pip_install.sh  another interpreter
#   WHEELS=dir python/check_pip_install.sh         offline: the pinned build requirements as wheels
#                                                  in dir (scripts/setup.sh leaves them in
#                                                  .deps/bundle/python-wheels); no build isolation
#   BUILD_DIR=build-x python/check_pip_install.sh  build in (and reuse) that CMake build folder;
#                                                  its cache then names pip's temporary interpreter
#                                                  and nanobind: give pip a folder of its own, or
#                                                  `cmake -U 'Python*' -U 'PYTHON_*' -U '_Python*'
#                                                  -U 'NB_*' -U 'SKBUILD*' -U nanobind_DIR
#                                                  -U CMAKE_MODULE_PATH -U CMAKE_PREFIX_PATH` after
#   SYSTEM_SITE=1 ...                              the venv sees the interpreter's packages (torch,
#                                                  numpy, pytest on a machine without a registry)
#   WHEEL_ONLY=1 ...                               build the wheel into dist/ and stop
#   INSTALL_WHEEL=dist/x.whl ...                   install that wheel (built elsewhere) instead of .
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pip_args=()
[[ -n "${BUILD_DIR:-}" ]] && pip_args+=(--config-settings=build-dir="$BUILD_DIR")
"$PYTHON" -m venv ${SYSTEM_SITE:+--system-site-packages} "$work/venv"
venv_python="$work/venv/bin/python"
if [[ -n "${WHEELS:-}" ]]; then
  # Offline: the build requirements go into the venv first, the build then runs in it.
  "$venv_python" -m pip install -q --no-index --find-links "$WHEELS" scikit-build-core nanobind
  pip_args+=(--no-index --find-links "$WHEELS" --no-build-isolation)
  # numpy (the package's one dependency): from WHEELS, else the interpreter's own (SYSTEM_SITE=1).
  "$venv_python" -c "import numpy" 2>/dev/null ||
    "$venv_python" -m pip install -q --no-index --find-links "$WHEELS" numpy 2>/dev/null || pip_args+=(--no-deps)
fi

start=$(date +%s)
if [[ -n "${WHEEL_ONLY:-}" ]]; then
  "$venv_python" -m pip wheel -q "${pip_args[@]}" --no-deps -w dist .
  echo "check_pip_install: wheel built in $(( $(date +%s) - start )) s: $(ls dist/fastinfer-*.whl)"
  exit 0
fi
if [[ -n "${INSTALL_WHEEL:-}" ]]; then
  # Offline (WHEELS or SYSTEM_SITE): the dependency (numpy) must already be there.
  "$venv_python" -m pip install -q ${WHEELS:+--no-index --no-deps} ${SYSTEM_SITE:+--no-index --no-deps} "$INSTALL_WHEEL"
else
  "$venv_python" -m pip install -q "${pip_args[@]}" .
fi
echo "check_pip_install: pip install ${INSTALL_WHEEL:-.} took $(( $(date +%s) - start )) s"

# Import from outside the source tree, so that python/fastinfer cannot shadow the installed one.
(cd "$work" && "$venv_python" -c "import fastinfer, sys; print('installed', fastinfer.__version__, 'at', fastinfer.__file__); sys.exit('not the installed package' if '/site-packages/' not in fastinfer.__file__ else 0)")
if "$venv_python" -c "import pytest" 2>/dev/null ||
   "$venv_python" -m pip install -q ${WHEELS:+--no-index --find-links "$WHEELS"} pytest 2>/dev/null; then
  # --import-mode=append: the installed fastinfer wins over anything on the tests' path.
  "$venv_python" -m pytest -q -p no:cacheprovider --import-mode=append python/tests
else
  echo "check_pip_install: no pytest available: import checked, tests not run" >&2
fi
