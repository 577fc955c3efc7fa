#!/usr/bin/env bash
# One device call that checks two cost-model changes on the GPU:
#   1. narrow tiles: how fast the batch-1 GEMV streams its weight in narrow
#      column strips, split-k forms and cuBLAS beside them
#      (bench/narrow_tiles.py), for bench/model_vs_gemv.py;
#   2. kernel-private dims and the short-row pricing on the general programs
#      they change (RMSNorm + SwiGLU FFN b1/b8/b16, QK-norm b1, gated MLP b1,
#      LayerNorm + GEMM b1), ours against eager and torch.compile.
# The narrow-tile sweep runs on two cores of its own while the package builds
# on the others, so the build does not slow its launches. $OUT receives
# narrow_tiles.json and bench.run's export (7 files at most) under run/.
#     OUT=dir bash bench/gpu_check/short_rows_and_dims.sh [seconds]
set -u
: "${OUT:?set OUT to the output directory}"
total=${1:-560}
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }

ncpu=$(nproc)
taskset -c $((ncpu - 2))-$((ncpu - 1)) python3 -m bench.narrow_tiles --out "$OUT/narrow_tiles.json" \
  > /tmp/narrow_tiles.log 2>&1 &
sweep=$!
CMAKE_BUILD_PARALLEL_LEVEL=$((ncpu - 2)) taskset -c 0-$((ncpu - 3)) \
  python3 -m pip install -q --no-build-isolation --no-deps . > /tmp/pip.log 2>&1 \
  || { tail -40 /tmp/pip.log; exit 1; }
echo "installed at $(elapsed) s"
wait $sweep
echo "narrow tiles done at $(elapsed) s"; cat /tmp/narrow_tiles.log

left=$(( total - $(elapsed) ))
work=$(mktemp -d)
python3 -m bench.run --out "$work" --export "$OUT/run" \
  --only rmsnorm_swiglu_ffn/b16,rmsnorm_swiglu_ffn/b8,rmsnorm_swiglu_ffn/b1,qk_norm_projections/b1,rmsnorm_gated_mlp/b1,layernorm_gemm/b1 \
  --impls eager,torch_compile,ours --no-ceilings --budget-s $((left - 100)) --hard-limit-s $((left - 25)) \
  --job-timeout-s 120 --ours-budget-s 25 --ours-search-s 30 --ours-opt top_k=16
echo "done at $(elapsed) s"
