"""bench/register_check.py: the cost model's registers against ptxas, no GPU.

layernorm_gemm's GEMV kernel feeds a [16, k.0] activation tile and a [k.0, 64]
weight tile to a dot on 16 rows, which runs as mma.sync and holds both in
registers: at k.0 = 1024 ptxas spills kilobytes a thread, and the model
calls the kernel over its registers; at k.0 = 256 neither. Run as the
command is, without TRITON_INTERPRET (under it nothing compiles)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "bench" / "results" / "h100-2026-12-06-registers" / "layernorm_gemm_c1.eqf"
OPT = ROOT / "build" / "eqiforge-opt"


@pytest.mark.skipif(not OPT.exists(), reason="needs the build's eqiforge-opt")
def test_the_model_calls_a_spilling_mma_sync_kernel_over_its_registers(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = tmp_path / "rows.jsonl"
    cmd = [sys.executable, "bench/register_check.py", str(PROGRAM), "--opt", str(OPT), "--blocks", "k.0=256",
           "--blocks", "k.0=1024", "--out", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {(r["kernel"], r["blocks"]["k.0"]): r for r in map(json.loads, out.read_text().splitlines())}
    slow = rows[("y_kernel", 1024)]
    assert slow["spill_stores"] >= 2048 and slow["model_over"], slow
    fits = rows[("y_kernel", 256)]
    assert fits["spill_stores"] == 0 and not fits["model_over"], fits
