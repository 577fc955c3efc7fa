#!/usr/bin/env bash
# Runs every test of the project, installing what is missing first:
#   1. the C++ suite: configure + build in build/ (Release), then ctest;
#   2. the Python suite: `pip install .`, then pytest on tests/python;
#   3. the C++ suite again under AddressSanitizer + UBSan (tests/sanitize.sh,
#      in build-asan/): a memory error, a leak or undefined behaviour that the
#      plain run does not notice fails here.
# Usage: bash tests/run.sh      (from anywhere)
#   EQF_JOBS=N              build and test parallelism (default 2)
#   EQF_SANITIZE_STAGE=0    skip stage 3 (default 1: run it; CI runs it)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PY=${PYTHON:-python3}
JOBS=${EQF_JOBS:-2}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore

step() { printf '\n==> %s\n' "$*"; }

# ---- what the build needs ------------------------------------------------------
if [ ! -f /usr/include/gtest/gtest.h ] && ! dpkg -s libgtest-dev >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    step "installing libgtest-dev"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y libgtest-dev
  else
    echo "GoogleTest is missing: run 'sudo apt-get install libgtest-dev', then run this again" >&2
    exit 1
  fi
fi

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja)
# torch: the CPU build (2.13.0 is the version this project pins for CPU tests);
# triton: kernels run on the CPU through TRITON_INTERPRET=1 in the tests.
for pair in nanobind:nanobind scikit_build_core:scikit-build-core pytest:pytest numpy:numpy \
            torch:torch==2.13.0 triton:triton==3.9.0; do
  "$PY" -c "import ${pair%%:*}" 2>/dev/null || missing+=("${pair#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  step "pip install ${missing[*]}"
  "$PY" -m pip install "${missing[@]}"
  hash -r
fi

# ---- C++ -------------------------------------------------------------------------
step "C++: configure and build (build/, Release)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEQF_TESTS=ON -DEQF_PYTHON=OFF
cmake --build build -j "$JOBS"

# A failing suite does not stop the other one: the run reports both, then
# exits non-zero if either failed.
status=0
step "C++: ctest"
ctest --test-dir build --output-on-failure -j "$JOBS" || status=1

# ---- Python ------------------------------------------------------------------------
# No build isolation: the build tools were checked above, and build/pip keeps the
# wheel's build tree between runs so a second run compiles only what changed.
step "Python: pip install ."
"$PY" -m pip install . --no-build-isolation -C build-dir=build/pip

step "Python: pytest"
"$PY" -m pytest tests/python -q || status=1

# ---- sanitizers ------------------------------------------------------------------------
# Last, so a quick failure above is reported first. It builds the whole suite
# a second time, instrumented, and runs ctest on it: about 12 minutes from
# scratch on 2 cores (docs/reliability.md has the figures).
case "${EQF_SANITIZE_STAGE:-1}" in
  0) step "C++ under ASan + UBSan: skipped (EQF_SANITIZE_STAGE=0)" ;;
  1)
    step "C++ under ASan + UBSan (tests/sanitize.sh, build-asan/)"
    EQF_JOBS="$JOBS" bash tests/sanitize.sh || status=1
    ;;
  *)
    echo "EQF_SANITIZE_STAGE must be 0 or 1, not '${EQF_SANITIZE_STAGE}'" >&2
    status=1
    ;;
esac

if [ "$status" -ne 0 ]; then
  step "FAILED: see the failing tests above"
fi
exit "$status"
