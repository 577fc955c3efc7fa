"""`python -m eqiforge.demo`: the bundled examples, and its failure path."""

import subprocess
import sys

from programs import NAIVE, TILED, WRONG


def test_demo_runs_the_bundled_examples():
    r = subprocess.run([sys.executable, "-m", "eqiforge.demo", "--trials", "3"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "result" in r.stdout and " ok" in r.stdout


def test_demo_fails_on_a_wrong_variant(tmp_path):
    (tmp_path / "mm").mkdir()
    (tmp_path / "mm" / "naive.eqf").write_text(NAIVE)
    (tmp_path / "mm" / "tiled.eqf").write_text(TILED)
    (tmp_path / "mm" / "wrong.eqf").write_text(WRONG)
    r = subprocess.run([sys.executable, "-m", "eqiforge.demo", "--examples", str(tmp_path)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1
    assert "mm/wrong.eqf" in r.stderr and "FAILED" in r.stderr
    rows = {line.split()[1]: line.split()[-1] for line in r.stdout.splitlines() if line.startswith("mm ")}
    assert rows == {"naive": "reference", "tiled": "ok", "wrong": "FAIL"}
