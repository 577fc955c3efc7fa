"""GPU-only time of SDPA (flash backend) for decode attention at batch 1
(32 heads, head dim 128, 4096 keys, fp16), next to the forms timed with
bench/gpu_check/module_kernels.py in the same call."""
import json
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, ".")
from bench.timing import L2Flusher, gpu_only_time  # noqa: E402

q = torch.randn(1, 32, 1, 128, device="cuda", dtype=torch.float16)
k = torch.randn(1, 32, 4096, 128, device="cuda", dtype=torch.float16)
v = torch.randn(1, 32, 4096, 128, device="cuda", dtype=torch.float16)
with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
    t, _ = gpu_only_time(lambda a, b, c: F.scaled_dot_product_attention(a, b, c), (q, k, v), L2Flusher(torch.device("cuda")))
print(json.dumps({"sdpa_flash_us": t * 1e6}))
with open(sys.argv[1], "w") as f:
    json.dump({"sdpa_flash_us": t * 1e6}, f)
