"""bench/gpu_check/fit_sweep.py on the committed H200 block sweep: the cost
model, evaluated at each measured configuration's blocks and stages, must
keep ranking the measured times about as well as when it was fitted
(bench/results/h200-2026-12-02e-README.md). A change to the model that
scrambles the ranking of measured kernels fails here."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "bench" / "results" / "h200-2026-12-02e" / "sweep.json"


def test_the_model_ranks_the_measured_sweep():
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check" / "fit_sweep.py"), str(SWEEP)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    found = re.findall(r"^(\S+): (\d+) configurations, spearman (-?[\d.]+)", r.stdout, re.M)
    n = {case: int(count) for case, count, _ in found}
    rho = {case: float(r) for case, _, r in found}
    # Every configuration that ran, less those the model calls infeasible.
    assert n["rmsnorm_swiglu_ffn/b16"] >= 180 and n["ngpt_update/b16"] >= 45 and n["gated_mlp/b1"] >= 40
    assert rho["rmsnorm_swiglu_ffn/b16"] >= 0.85 and rho["ngpt_update/b16"] >= 0.85 and rho["gated_mlp/b1"] >= 0.65
    # The configuration it ranks first for ngpt_update is the fastest measured.
    assert re.search(r"^ngpt_update/b16: .* best measured 27.5 us, the model's first 27.5 us", r.stdout, re.M)
