#!/usr/bin/env bash
# GPU-only time of emitted batch-1 modules in both GEMV forms (forward's
# gemv_dot: a tl.dot of the vector padded to 16 rows, or a multiply and sum)
# over the block sizes and stages that matter to each: the whole k in the
# outer level, inner blocks of k that the pipeliner streams, 16-64 columns.
#     OUT=dir bash bench/gpu_check/gemv_forms.sh MODULE.py ...
set -u
: "${OUT:?set OUT to the output directory}"
specs=()
for m in "$@"; do
  for dot in False True; do
    for k1 in 64 128 256 512; do
      for n0 in 16 32 64; do
        for st in 3 5; do
          specs+=("$m@block_k0=4096,block_k1=$k1,block_n0=$n0,num_warps=4,num_stages=$st,gemv_dot=$dot")
        done
      done
    done
  done
  specs+=("$m@block_k0=4096,block_k1=2048,block_n0=16,num_warps=4,num_stages=3")
done
python3 bench/gpu_check/module_kernels.py "$OUT/gemv_forms.json" "${specs[@]}"
