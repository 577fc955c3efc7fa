#!/usr/bin/env bash
# Builds the C++ test suite with AddressSanitizer + UndefinedBehaviorSanitizer
# (EQF_SANITIZE=ON) in build-asan/ and runs it with ctest. Any sanitizer
# report fails the run: ASan aborts on its first error by default, and UBSan
# is told to do the same (by default it prints and carries on, so a report
# would pass unnoticed).
#
# Usage: bash tests/sanitize.sh [ctest arguments...]
#   EQF_JOBS=N     build and test parallelism (default 2)
#   EQF_ASAN_DIR   build directory (default build-asan)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

JOBS=${EQF_JOBS:-2}
DIR=${EQF_ASAN_DIR:-build-asan}

# RelWithDebInfo: -O2 keeps the interpreter-heavy tests fast enough under the
# sanitizers' overhead, -g gives reports with file:line.
cmake -S . -B "$DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DEQF_SANITIZE=ON -DEQF_TESTS=ON -DEQF_PYTHON=OFF
cmake --build "$DIR" -j "$JOBS"

# detect_leaks: the suite must not leak either. halt_on_error /
# abort_on_error make a report end the test with a failure status.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
ctest --test-dir "$DIR" --output-on-failure -j "$JOBS" "$@"
