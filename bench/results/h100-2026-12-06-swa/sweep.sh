#!/usr/bin/env bash
# Per-kernel GPU-only times of the sliding-window attention subgraph's forms
# over block sizes (bench/gpu_check/module_kernels.py), from the repository root.
set -euo pipefail
D=bench/results/h100-2026-12-06-swa
python3 bench/gpu_check/module_kernels.py "$1" \
  $D/attention_tuned.py@block_e0=64,block_f0=32,block_h10=2,block_t0=512,num_warps=4,num_stages=3 \
  $D/attention_flash_decoding.py@block_t0=512,block_h10=2,block_e0=32,num_warps=4,num_stages=3 \
  $D/attention_flash_decoding.py@block_t0=64,block_h10=1,block_e0=64,num_warps=4,num_stages=2 \
  $D/attention_flash_decoding.py@block_t0=64,block_h10=1,block_e0=128,num_warps=4,num_stages=2 \
  $D/attention_flash_decoding.py@block_t0=64,block_h10=4,block_e0=64,num_warps=4,num_stages=2 \
  $D/attention_flash_decoding.py@block_t0=64,block_h10=4,block_e0=128,num_warps=4,num_stages=2 \
  $D/attention_flash_decoding.py@block_t0=128,block_h10=1,block_e0=64,num_warps=4,num_stages=2 \
  $D/attention_flash_decoding.py@block_t0=128,block_h10=1,block_e0=128,num_warps=4,num_stages=2 \
  $D/attention_flash_decoding.py@block_t0=128,block_h10=4,block_e0=64,num_warps=4,num_stages=2 \
  $D/attention_flash_decoding.py@block_t0=128,block_h10=4,block_e0=128,num_warps=4,num_stages=2 \
  $D/attention_flash_decoding.py@block_t0=256,block_h10=1,block_e0=64,num_warps=4,num_stages=2 \
  $D/attention_flash_decoding.py@block_t0=256,block_h10=1,block_e0=128,num_warps=4,num_stages=2 \
  $D/attention_flash_decoding.py@block_t0=256,block_h10=4,block_e0=64,num_warps=4,num_stages=2 \
  $D/attention_flash_decoding.py@block_t0=256,block_h10=4,block_e0=128,num_warps=4,num_stages=2 \
  $D/attention_flash_decoding.py@block_t0=128,block_h10=4,block_e0=128,num_warps=8,num_stages=2
# SDPA-flash's attention alone on the window (the baseline's middle part), same timer.
python3 - <<'PY'
import torch, torch.nn.functional as F
from bench.timing import L2Flusher, gpu_only_time
kc = torch.randn(1, 8, 16384, 128, device="cuda", dtype=torch.float16)
vc = torch.randn_like(kc)
q = torch.randn(1, 32, 1, 128, device="cuda", dtype=torch.float16)
f = lambda q, kc, vc: F.scaled_dot_product_attention(q, kc[:, :, 12288:], vc[:, :, 12288:], enable_gqa=True)
for clean in (False, True):
    t, _ = gpu_only_time(f, (q, kc, vc), L2Flusher(torch.device("cuda")), clean=clean)
    print({"sdpa_window_attention_us": round(t * 1e6, 2), "clean_flush": clean})
PY
