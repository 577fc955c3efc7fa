#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz_parse, fuzz_pattern) with clang and
# -fsanitize=fuzzer,address,undefined, and lays out their seed corpora:
#   BUILD/fuzz_parse    BUILD/corpus/parse     (every examples/*/*.eqf, fuzz/seeds/parse/*
#                                              and 100 random programs from gen_corpus)
#   BUILD/fuzz_pattern  BUILD/corpus/pattern   (fuzz/seeds/pattern/*)
# Usage: bash fuzz/build.sh [BUILD]        (default build-fuzz)
# Then e.g. (docs/reliability.md):
#   build-fuzz/fuzz_parse -dict=fuzz/ir.dict -max_total_time=600 -timeout=5 \
#     -rss_limit_mb=2048 build-fuzz/corpus/parse
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${1:-build-fuzz}
JOBS=${EQF_JOBS:-2}

if ! command -v clang++ >/dev/null; then
  echo "clang++ not found: apt-get install -y clang libclang-rt-14-dev (or the version Debian has)" >&2
  exit 1
fi

CXX=clang++ cmake -S fuzz -B "$BUILD" -G Ninja
cmake --build "$BUILD" -j "$JOBS"

# Seeds are copied, not linked: libFuzzer adds what it finds to the first
# corpus directory, and the sources must stay as they are.
mkdir -p "$BUILD/corpus/parse" "$BUILD/corpus/pattern"
for f in examples/*/*.eqf; do
  cp -n "$f" "$BUILD/corpus/parse/seed_$(echo "${f#examples/}" | tr / _)"
done
cp -n fuzz/seeds/parse/* "$BUILD/corpus/parse/"
"$BUILD/gen_corpus" "$BUILD/corpus/parse" 100
cp -n fuzz/seeds/pattern/* "$BUILD/corpus/pattern/"
echo "built $BUILD/fuzz_parse and $BUILD/fuzz_pattern; corpora in $BUILD/corpus"
