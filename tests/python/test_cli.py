"""The `eqiforge-opt` command that `pip install .` puts on the PATH."""

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

import eqiforge
from programs import NAIVE, OTHER_EXTENT, TILED, WRONG


def find_cli() -> str:
    # The scripts folder of this interpreter first: that is where pip installed it.
    here = Path(sysconfig.get_path("scripts")) / "eqiforge-opt"
    if here.exists():
        return str(here)
    found = shutil.which("eqiforge-opt")
    if found is None:
        pytest.fail("eqiforge-opt is not installed (pip install . installs it)")
    return found


def cli(*args, stdin=None):
    return subprocess.run([find_cli(), *map(str, args)], input=stdin, capture_output=True, text=True, timeout=120)


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, text in [("naive", NAIVE), ("tiled", TILED), ("wrong", WRONG), ("other", OTHER_EXTENT)]:
        paths[name] = tmp_path / f"{name}.eqf"
        paths[name].write_text(text)
    paths["bad"] = tmp_path / "bad.eqf"
    paths["bad"].write_text("(program p\n  (dims (m 2))\n  (input x f32 [m])\n  (output y [m] (add x)))\n")
    return paths


def test_cli_is_on_the_path_of_this_environment():
    assert os.access(find_cli(), os.X_OK)


def test_help_lists_the_verbs():
    r = cli("--help")
    assert r.returncode == 0
    for verb in ["check", "eval", "equiv", "print"]:
        assert f"\n  {verb} " in r.stdout
    r = cli("equiv", "--help")
    assert r.returncode == 0 and "--trials" in r.stdout
    assert cli("help", "eval").stdout == cli("eval", "--help").stdout


def test_usage_errors_exit_2():
    assert cli().returncode == 2
    r = cli("frobnicate")
    assert r.returncode == 2 and "unknown verb 'frobnicate'" in r.stderr
    r = cli("check")
    assert r.returncode == 2 and "expects 1 operand" in r.stderr
    r = cli("eval", "x.eqf", "--sed", "3")
    assert r.returncode == 2 and "unknown option '--sed'" in r.stderr
    r = cli("eval", "x.eqf", "--seed", "three")
    assert r.returncode == 2 and "--seed" in r.stderr
    r = cli("eval", "x.eqf", "--block", "k0=3")
    assert r.returncode == 2 and "AXIS=N" in r.stderr


def test_check_prints_output_types(files):
    r = cli("check", files["naive"])
    assert r.returncode == 0, r.stderr
    assert r.stdout == "c: f32[m n]\n"
    r = cli("check", "-", stdin=TILED)
    assert r.returncode == 0 and r.stdout == "c: f32[m n]\n"


def test_errors_in_programs_exit_2_with_position(files):
    r = cli("check", files["bad"])
    assert r.returncode == 2
    assert r.stderr.startswith(f"{files['bad']}:4:"), r.stderr
    r = cli("check", files["bad"].with_name("missing.eqf"))
    assert r.returncode == 2 and "missing.eqf" in r.stderr


def test_print_is_canonical(files):
    r = cli("print", files["tiled"])
    assert r.returncode == 0
    again = cli("print", "-", stdin=r.stdout)
    assert again.returncode == 0 and again.stdout == r.stdout


def test_eval_prints_shape_and_checksum(files):
    r = cli("eval", files["naive"], "--seed", "5")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("c [m=3 n=2] sum=")
    # A tiled form with any block size gives the same checksum (10 digits).
    for block in ["1", "2", "5"]:
        t = cli("eval", files["tiled"], "--seed", "5", "--block", f"k.0={block}")
        assert t.returncode == 0, t.stderr
        assert t.stdout == f"blocks k.0={block}\n" + r.stdout
    r = cli("eval", files["tiled"], "--block", "m.0=2")
    assert r.returncode == 2 and "m.0" in r.stderr


def test_estimate_prints_the_bound_at_the_best_or_given_blocks(files):
    import json
    best = cli("estimate", files["tiled"], "--json")
    assert best.returncode == 0, best.stderr
    b = json.loads(best.stdout)
    assert b["feasible"] and b["target"] == "h200" and b["num_stages"] in (2, 3, 4, 5)
    assert set(b["block_sizes"]) == {"k.0"} and len(b["kernels"]) == 1
    given = json.loads(cli("estimate", files["tiled"], "--json", "--block", "k.0=2", "--stages", "4").stdout)
    assert given["block_sizes"] == {"k.0": 2} and given["num_stages"] == 4
    assert given["estimated_us"] >= b["estimated_us"]
    text = cli("estimate", files["tiled"], "--block", "k.0=2")
    assert text.returncode == 0 and text.stdout.startswith("h200 at 3 stages: ") and "kernel " in text.stdout
    # A given size for some axes only names the one missing.
    missing = cli("estimate", files["tiled"], "--block", "m.0=2")
    assert missing.returncode == 2 and "no block size (at least 1) for axes k.0" in missing.stderr


def test_extract_without_a_candidate_says_why(files):
    # Too few e-nodes for any tiled form: the limit and the flag that raises it.
    r = cli("extract", files["naive"], "--node-limit", "3")
    assert r.returncode == 0, r.stderr
    assert "no candidate: an output has no tiled form in the e-graph; saturation stopped at its node-limit" \
        in r.stdout and "--node-limit" in r.stdout, r.stdout


def test_equiv_exit_codes(files):
    r = cli("equiv", files["naive"], files["tiled"], "--trials", "5", "--seed", "9")
    assert r.returncode == 0, r.stdout + r.stderr
    assert sum(line.startswith("trial ") for line in r.stdout.splitlines()) == 5
    assert r.stdout.rstrip().endswith("equivalent (tolerance 1e-09)")
    r = cli("equiv", files["naive"], files["wrong"])
    assert r.returncode == 1 and "NOT equivalent" in r.stdout
    r = cli("equiv", files["naive"], files["other"])
    assert r.returncode == 2 and "input 'a' has dims" in r.stderr
    r = cli("equiv", files["naive"], files["tiled"], "--trials", "0")
    assert r.returncode == 2


def test_cli_and_bindings_agree(files):
    r = cli("equiv", files["naive"], files["wrong"], "--trials", "2")
    err = eqiforge.equiv(NAIVE, WRONG, trials=2)
    assert f"max relative error {err:.3g} over 2 trials" in r.stdout
