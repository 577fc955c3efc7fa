"""Compares the cost model with a block sweep's measurements (no GPU needed).

    python3 bench/gpu_check/fit_sweep.py SWEEP.json [--target h200]

SWEEP.json is what sweep_blocks.py writes: per case the candidate's program
and, per configuration, its launch parameters and measured time. For every
configuration that ran, `eqiforge-opt estimate` gives the model's bound at the
same block sizes and stages; per case it prints the rank correlation
(Spearman) of estimate and measurement, the rms of log(estimate/measured),
the best measured time, and the measured time of the configuration the model
ranks first (what the tuner would start from, were those all the choices).
"""
import argparse
import ast
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile


def opt_path():
    return os.environ.get("EQIFORGE_OPT") or shutil.which("eqiforge-opt") or "eqiforge-opt"


def block_params(opt, program_file):
    """The emitted module's {axis: keyword} (BLOCK_PARAMS)."""
    out = subprocess.run([opt, "emit", program_file], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^BLOCK_PARAMS = (\{.*\})$", out, re.M)
    return ast.literal_eval(m.group(1)) if m else {}


def estimate(opt, program_file, axes, params, target):
    args = [opt, "estimate", program_file, "--json", "--target", target, "--stages", str(params["num_stages"])]
    for kw, size in params.items():
        if kw in axes:
            args += ["--block", f"{axes[kw]}={size}"]
    r = subprocess.run(args, capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else None


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0] * len(values)
    for r, i in enumerate(order):
        out[i] = r
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep")
    ap.add_argument("--target", default="h200")
    a = ap.parse_args()
    opt = opt_path()
    sweep = json.load(open(a.sweep))
    regret = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for case, c in sweep.items():
            path = os.path.join(tmp, case.replace("/", "-") + ".eqf")
            with open(path, "w") as f:
                f.write(c["program"])
            axes = {kw: axis for axis, kw in block_params(opt, path).items()}
            pts = []
            for row in c["rows"]:
                if "us" not in row:
                    continue
                e = estimate(opt, path, axes, row["params"], a.target)
                if e and e["feasible"]:
                    pts.append((row["us"], e["estimated_us"], row["params"]))
            if len(pts) < 2:
                print(f"{case}: fewer than two configurations to compare")
                continue
            n = len(pts)
            ra, rb = ranks([p[0] for p in pts]), ranks([p[1] for p in pts])
            rho = 1 - 6 * sum((x - y) ** 2 for x, y in zip(ra, rb)) / (n * (n * n - 1))
            err = math.sqrt(sum(math.log(p[1] / p[0]) ** 2 for p in pts) / n)
            best = min(p[0] for p in pts)
            pick = min(pts, key=lambda p: p[1])
            regret += math.log(pick[0] / best)
            print(f"{case}: {n} configurations, spearman {rho:.2f}, rms log error {err:.2f}; best measured "
                  f"{best:.1f} us, the model's first {pick[0]:.1f} us (estimate {pick[1]:.1f}) at {pick[2]}")
    print(f"sum of log(model's first / best): {regret:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
