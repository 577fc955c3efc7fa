"""bench/spills.py: registers and spills of emitted kernels via ptxas, no GPU.

The mHC connection module as the search once chose it holds a [16, 2048]
tile, its fp32 square and a [2048, 16] weight tile at once in its H_pre
kernel (kilobytes of spills a thread); the looped candidate's H_res kernel
holds a few small tiles (none). Run as the command is, in a process without
TRITON_INTERPRET (under it, triton's library functions are interpreted and
nothing compiles)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "h200-2026-12-04-mhc-dot"
LINE = re.compile(r"(\w+): (\d+) registers, (\d+) bytes spill stores, (\d+) bytes spill loads")


def spills(module, *params):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    cmd = [sys.executable, "bench/spills.py", str(RESULTS / module)] + [a for p in params for a in ("--param", p)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    rows = {m[1]: tuple(int(x) for x in m.groups()[1:]) for m in LINE.finditer(done.stdout)}
    assert rows, done.stdout + done.stderr
    return done.returncode, rows


def test_a_kernel_past_the_registers_spills():
    rc, rows = spills("connection_before.py", "block_h0=2", "block_k10=512", "block_m0=1", "num_warps=4",
                      "num_stages=4")
    regs, stores, loads = rows["b0_sigmoid__kernel"]
    assert stores > 1024 and loads > 1024, rows
    assert rc == 1  # some kernel spills


def test_a_kernel_of_small_tiles_does_not():
    _, rows = spills("connection_looped.py", "block_m0=1", "block_e0=1", "block_h0=1", "block_k10=1024")
    assert set(rows) == {"b0_sigmoid__kernel", "b1_mul_1_kernel", "b2_view_kernel"}
    regs, stores, loads = rows["b2_view_kernel"]
    assert 0 < regs <= 255 and stores == 0 and loads == 0, rows
