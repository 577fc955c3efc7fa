"""The whole-optimizer fuzzer (python -m eqiforge.fuzz): random programs from
`eqiforge-opt gen-program` through saturation, extraction, emission and
Triton's interpreter, against the reference interpreter; and the minimized
failures it found (tests/golden/fuzz/*.eqf), each checked as written or, when
its header says `; fuzz-check: top K ARGS`, through its K best candidates."""

import os
import re
import subprocess
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402

pytest.importorskip("triton")
pytest.importorskip("torch")

import importlib  # noqa: E402

check = importlib.import_module("eqiforge.check")
fuzz = importlib.import_module("eqiforge.fuzz")

ROOT = Path(__file__).resolve().parents[2]
REGRESSIONS = sorted(p.name for p in (ROOT / "tests" / "golden" / "fuzz").glob("*.eqf"))

# The CI mode on a fixed seed range: about a minute on 2 cores.
CI_SEEDS = range(500, 620)


def gen(*args):
    return subprocess.run([check._emitter(), "gen-program", *map(str, args)], capture_output=True, text=True,
                          timeout=60)


def test_ci_mode_finds_no_wrong_result_and_no_crash():
    config = fuzz.MODES["ci"]["config"]
    results = {r.seed: r for r in fuzz.run(CI_SEEDS, config, jobs=2)}
    assert sorted(results) == list(CI_SEEDS)
    failures = [r.line() for r in results.values() if r.status in fuzz.FAILURES]
    assert not failures, "\n".join(failures)
    # Most programs get candidates that are checked: a run where extraction
    # or the generator stopped producing anything must not pass as clean.
    ok = [r for r in results.values() if r.status == "ok"]
    assert len(ok) >= 0.8 * len(CI_SEEDS), {s: r.line() for s, r in results.items() if r.status != "ok"}
    assert sum(r.candidates for r in ok) >= len(ok)


def test_generated_programs_depend_only_on_the_seed():
    args = fuzz.MODES["ci"]["config"].gen_args
    first, again, other = gen("--seed", 7, *args), gen("--seed", 7, *args), gen("--seed", 8, *args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == again.stdout
    assert first.stdout != other.stdout
    assert "(program gen7" in first.stdout


def test_tiled_twin_computes_the_plain_program():
    import eqiforge

    for seed in (3, 11, 12):
        plain = gen("--seed", seed, "--finite").stdout
        tiled = gen("--seed", seed, "--finite", "--form", "tiled").stdout
        assert eqiforge.equiv(plain, tiled, seed=seed, trials=2) <= eqiforge.TOLERANCE


def test_in_range_programs_stay_within_their_dtypes():
    # --in-range: f16 programs keep every value below 65504 (a kernel that
    # stores an f16 intermediate must not overflow where float64 does not).
    import numpy as np

    from eqiforge import _core

    args = fuzz.MODES["long"]["config"].gen_args
    assert "--in-range" in args
    checked = 0
    for seed in range(100990, 101030):
        text = gen("--seed", seed, *args).stdout
        if "(input x0 f16" not in text:
            continue
        out = _core.evaluate(text, seed=seed, blocks={})
        assert all(np.abs(v).max() < 65504 for v in out.values()), text
        checked += 1
    assert checked >= 3
    assert gen("--in-range", "--seed", 1).returncode == 2  # needs --finite


def test_gen_program_options_are_checked():
    assert gen("--form", "tiled", "--no-tiled").returncode == 2
    assert gen("--max-ops", 2, "--min-ops", 5).returncode == 2
    assert gen("--min-output-rank", 1, "--seed", 1).returncode == 0


def test_a_wrong_candidate_is_reported(monkeypatch):
    # Extraction "finds" a candidate computing 3x where the program computes 2x.
    program = "(program p (dims (m 5)) (input x f32 [m]) (output y [m] (mul x 2)))\n"
    wrong = program.replace("(mul x 2)", "(mul x 3)")
    monkeypatch.setattr(fuzz, "generate", lambda seed, gen_args=(), form="plain": program)
    monkeypatch.setattr(fuzz, "_extract", lambda text, config, also: ([{"rank": 1, "program": wrong}], {}))
    r = fuzz.fuzz_one(1, fuzz.Config(trials=1))
    assert r.status == "wrong" and r.stage == "run", r.line()
    assert "candidate 1" in r.detail


def test_a_module_that_raises_is_a_crash(monkeypatch):
    program = "(program p (dims (m 5)) (input x f32 [m]) (output y [m] (mul x 2)))\n"
    monkeypatch.setattr(fuzz, "generate", lambda seed, gen_args=(), form="plain": program)
    monkeypatch.setattr(fuzz, "_extract", lambda text, config, also: ([{"rank": 1, "program": program}], {}))
    monkeypatch.setattr(check, "emit", lambda text, unit_axes=None, source="-": "raise RuntimeError('boom')\n")
    r = fuzz.fuzz_one(2, fuzz.Config(trials=1))
    assert r.status == "crash" and r.stage == "run" and "boom" in r.detail, r.line()


def test_no_candidate_names_the_outputs_extraction_cannot_fill():
    text = """(program p (dims (m 5) (u 1) (m2 5)) (input x f32 [m])
  (let c (rename m m2 x))
  (output y [] (sum m x))
  (output z [u] (sum m (mul x (cast f32 (iota u)))))
  (output w [m2] c)
  (output v [m] (exp x)))
"""
    reason = fuzz.no_candidate_reason({"states_expanded": 0}, text)
    assert "output y is a scalar" in reason and "output z has only dims of extent 1" in reason
    assert "output w is input x relaid out" in reason and "output v" not in reason
    assert "no valid filling" in reason


def test_noise_floor_sees_cancelling_sums_only():
    # Fuzzer seed 100072 (long mode): on the inputs of trial seed 100072, y0
    # is 0.0052 summed from terms near 0.5, and every candidate's f32 sum is
    # 1.1e-5 to 1.8e-5 off (relative); y1 and y2 are benign.
    text = """(program gen100072
  (dims (s 11) (t 17) (f 11) (t_2 17))
  (input x0 f32 [f])
  (input x1 f32 [s f])
  (input x2 f32 [f])
  (input x3 f32 [f])
  (let t0 (min2 (matmul f x0 x2) x0))
  (let t1 (where (eq t0 0.25) t0 x2))
  (let v1 (where (lt t0 0) t0 (sum f x0)))
  (let v0 (matmul f (max2 x1 (max f t1)) x3))
  (output y0 [s] v0)
  (output y1 [f] v1)
  (output y2 [f] (sub x2 t1)))
"""
    floor = fuzz.noise_floor(text, seed=100072)
    assert floor["y0"] * fuzz.NOISE_FACTOR > 1.8e-5
    assert floor["y1"] < 1e-5 and floor["y2"] < 1e-5
    trial = check.Trial(100072, {}, {"y0": 1.8e-5, "y1": 0.0, "y2": 0.0},
                        {"y0": check.TOLERANCE_FP32, "y1": check.TOLERANCE_FP32, "y2": check.TOLERANCE_FP32})
    assert fuzz._within_noise(text, trial)
    # The floor does not excuse a benign output, nor anything past the cap.
    trial.errors = {"y0": 0.0, "y1": 1.8e-5, "y2": 0.0}
    assert not fuzz._within_noise(text, trial)
    trial.errors = {"y0": 2 * fuzz.NOISE_CAP, "y1": 0.0, "y2": 0.0}
    assert not fuzz._within_noise(text, trial)


def test_noise_floor_of_half_outputs_uses_their_roundoff():
    # Fuzzer seed 101649 (long mode): a candidate reads the row max back from
    # the bf16 output y0 (rounded by 2^-9) under an exp: y1 is 1.03e-2 off.
    text = """(program gen101649
  (dims (t 2) (f 16) (k 4))
  (input x2 bf16 [t f k])
  (let t0 (sum f x2))
  (let v0 (max t t0))
  (output y0 [k] v0)
  (output y1 [k] (sum t (exp (sub t0 v0)))))
"""
    assert fuzz.half_step(text) == 2.0 ** -9
    trial = check.Trial(101651, {}, {"y0": 0.00684, "y1": 0.0103}, {"y0": 0.01, "y1": 0.01})
    assert fuzz._within_noise(text, trial)
    trial.errors = {"y0": 0.00684, "y1": 0.04}
    assert not fuzz._within_noise(text, trial)


# Fuzzer seed 300160 (ci mode): y0 is the variance over t of columns that are
# constant (x0 broadcast over t where x0 != 0): exactly 0, 1e-31 in float64
# (the rounding of the mean), so every candidate is "relative error 1" off.
ZERO_VARIANCE = """(program gen300160
  (dims (k 8) (t 11) (s 1) (k_2 8) (t_2 11))
  (input x0 f64 [s k])
  (input x1 f64 [t s])
  (input x2 f64 [s])
  (let t0 (where (eq x0 0) x1 x0))
  (let v1 (matmul s x2 t0))
  (let t1 (sub t0 (div (sum t t0) 11)))
  (output y0 [s k] (sum t (mul t1 t1)))
  (output y1 [k t] v1))
"""

# Fuzzer seed 300980 (ci mode): t1 = sum t^2 = 650 from iota, so t1 - (x0 + t1)
# loses 650 x 2^-24 against x0 ~ 1 in f32: every candidate is 2.5e-5 off, and
# moving the inputs does not show it.
ROUNDED_IOTA = """(program gen300980
  (dims (s 13) (n 5) (t 13) (h 13) (t_2 13) (h_2 13))
  (input x0 f32 [s n])
  (input x1 f32 [s t h])
  (let t0 (cast f32 (iota t)))
  (let t1 (matmul t t0 t0))
  (output y0 [h t] (matmul s (max n (sub t1 (add x0 t1))) x1)))
"""

# No cancellation: positive terms, one f32 rounding of each value.
BENIGN = """(program p (dims (m 6) (k 7)) (input x f32 [m k]) (input w f32 [k])
  (let e (exp x))
  (output y [m] (sum k (mul e (add (cast f32 (iota k)) 1))))
  (output z [m k] (mul e (exp w))))
"""


def test_rounding_floor_sees_rounding_that_inputs_do_not_move():
    fp32 = check.TOLERANCE_FP32
    # Seed 300980: the input floor misses the rounded iota sum, the rounding floor sees it.
    assert fuzz.NOISE_FACTOR * fuzz.noise_floor(ROUNDED_IOTA, 300980)["y0"] < 2.51e-5
    assert fuzz.NOISE_FACTOR * fuzz.rounding_floor(ROUNDED_IOTA, 300980)["y0"] > 2.51e-5
    trial = check.Trial(300980, {}, {"y0": 2.51e-5}, {"y0": fp32})
    assert fuzz._within_noise(ROUNDED_IOTA, trial)
    trial.errors = {"y0": 2 * fuzz.NOISE_CAP}  # the cap still holds
    assert not fuzz._within_noise(ROUNDED_IOTA, trial)
    # Seed 300160: y0 is numerically zero (rounding alone moves it by more
    # than half), so its error is not held to the cap -- but to 10x the floor.
    assert fuzz.rounding_floor(ZERO_VARIANCE, 300160)["y0"] >= fuzz.NOISE_ZERO
    assert fuzz.rounding_floor(ZERO_VARIANCE, 300160)["y1"] < 1e-14
    trial = check.Trial(300160, {}, {"y0": 1.0, "y1": 0.0}, {"y0": fp32, "y1": fp32})
    assert fuzz._within_noise(ZERO_VARIANCE, trial)
    trial.errors = {"y0": 1e6, "y1": 0.0}  # a kernel's garbage, not rounding
    assert not fuzz._within_noise(ZERO_VARIANCE, trial)
    trial.errors = {"y0": 0.0, "y1": 2e-5}  # y1 is benign
    assert not fuzz._within_noise(ZERO_VARIANCE, trial)


# Fuzzer seed 905249 (ci mode): (t0 + 1e-6) - t0 in f16 with t0 ~ 10 is
# 1e-6 in float64 and ulp-sized in a kernel's f32: a half output that is
# numerically zero, 5.9e-2 off, past the half cap (5e-2) that holds other
# half outputs.
CANCELLING_HALF = """(program gen905249
  (dims (f 12) (k 5))
  (input x0 f16 [k f])
  (input x1 bool [f])
  (let t0 (matmul f x0 x0))
  (let v0 (sub (add t0 1e-06) t0))
  (output y0 [k] v0))
"""


def test_a_numerically_zero_half_output_is_not_held_to_the_half_cap():
    half = check.TOLERANCE_HALF
    assert fuzz.rounding_floor(CANCELLING_HALF, 905249)["y0"] >= fuzz.NOISE_ZERO
    trial = check.Trial(905249, {}, {"y0": 0.0588}, {"y0": half})
    assert fuzz._within_noise(CANCELLING_HALF, trial)
    trial.errors = {"y0": 1e6}  # garbage, not rounding
    assert not fuzz._within_noise(CANCELLING_HALF, trial)
    # A half output that is not numerically zero keeps the cap.
    text = """(program p (dims (m 6) (k 7)) (input x f16 [m k])
  (output y [m] (sum k (exp x))))
"""
    assert fuzz.rounding_floor(text, 7)["y"] < fuzz.NOISE_ZERO
    assert not fuzz._within_noise(text, check.Trial(7, {}, {"y": 0.06}, {"y": half}))


# Fuzzer seed 908581 (ci mode): gelu deep in its negative tail; on the
# seed's own inputs y0 is (-3e-45, -7e-44), f32 subnormals of a few bits.
GELU_TAIL = """(program gen908581
  (dims (h 13) (t 2) (t_2 2))
  (input x0 f32 [t h])
  (input x1 f32 [t h])
  (output y0 [t] (gelu (sum h (sub -1 (sub x0 x1))))))
"""


def test_an_output_below_its_dtypes_normal_range_is_zero_at_its_resolution():
    fp32 = check.TOLERANCE_FP32
    trial = check.Trial(908581, {}, {"y0": 0.0447}, {"y0": fp32})
    assert fuzz._within_noise(GELU_TAIL, trial)
    trial.errors = {"y0": 1e40}  # off by far more than the smallest normal f32
    assert not fuzz._within_noise(GELU_TAIL, trial)
    # On the next trial's inputs y0 is -4e-13, a normal f32: held to the floors.
    assert not fuzz._within_noise(GELU_TAIL, check.Trial(908582, {}, {"y0": 2.16e-4}, {"y0": fp32}))


@pytest.mark.parametrize("seed,text", [(300160, ZERO_VARIANCE), (300980, ROUNDED_IOTA)],
                         ids=["seed300160", "seed300980"])
def test_the_programs_own_rounding_is_ok_within_the_noise_floor(monkeypatch, seed, text):
    # The whole driver on the two programs: candidates past the tolerance by
    # their rounding only.
    monkeypatch.setattr(fuzz, "generate", lambda seed, gen_args=(), form="plain": text)
    r = fuzz.fuzz_one(seed, fuzz.MODES["ci"]["config"])
    assert r.status == "ok" and r.noise, r.line()
    assert r.worst_error > check.TOLERANCE_FP32


def test_an_output_off_by_1e_2_without_cancellation_is_wrong(monkeypatch):
    # Both floors of this program are about 2e-7 -- it rounds, but nothing
    # amplifies the rounding -- so neither excuses an output 1e-2 off, nor
    # one just past the tolerance.
    rounding = fuzz.rounding_floor(BENIGN, 7)
    assert 0 < rounding["y"] < 1e-6 and 0 < rounding["z"] < 1e-6
    fp32 = check.TOLERANCE_FP32
    for errors in ({"y": 1e-2, "z": 0.0}, {"y": 0.0, "z": 1e-2}, {"y": 2e-5, "z": 0.0}):
        assert not fuzz._within_noise(BENIGN, check.Trial(7, {}, errors, {"y": fp32, "z": fp32})), errors
    wrong = BENIGN.replace("(sum k (mul e", "(mul 1.01 (sum k (mul e").replace("1))))\n", "1)))))\n", 1)
    assert wrong != BENIGN
    monkeypatch.setattr(fuzz, "generate", lambda seed, gen_args=(), form="plain": BENIGN)
    monkeypatch.setattr(fuzz, "_extract", lambda text, config, also: ([{"rank": 1, "program": wrong}], {}))
    r = fuzz.fuzz_one(7, fuzz.Config(trials=2))
    assert r.status == "wrong" and r.stage == "run", r.line()
    assert "y 0.01 " in r.detail, r.detail


def test_output_tolerances_follow_half_precision_values():
    text = (ROOT / "tests" / "golden" / "fuzz" / "half_cast_output.eqf").read_text()
    assert check.output_tolerances(text) == {"y0": check.TOLERANCE_FP32, "y1": check.TOLERANCE_HALF}


@pytest.mark.parametrize("name", REGRESSIONS)
def test_fuzz_regression(name):
    path = ROOT / "tests" / "golden" / "fuzz" / name
    text = path.read_text()
    spec = re.search(r"^; fuzz-check: top (\d+)(.*)$", text, re.M)
    if spec:
        results = check.check_candidates(text, int(spec.group(1)), spec.group(2).split(), seed=3, trials=2,
                                         source=name)
        trials = [t for _, ts in results for t in ts]
    else:
        trials = check.check_program(text, seed=3, trials=3, source=name)
    for t in trials:
        assert t.ok, f"{name}: errors {t.errors} (tolerances {t.tolerances}) with blocks {t.blocks}"


def test_relative_error_counts_equal_values_and_nothing_else():
    import numpy as np

    inf, nan = float("inf"), float("nan")
    assert check.relative_error(np.array([inf, 1.0, 2.0]), np.array([inf, 1.0, 2.0])) == 0
    assert check.relative_error(np.array([inf, 1.0]), np.array([5.0, 1.0])) == inf
    assert check.relative_error(np.array([3.0, 1.0]), np.array([inf, 1.0])) == inf
    assert check.relative_error(np.array([nan, 1.0]), np.array([2.0, 1.0])) == inf
    assert check.relative_error(np.array([inf, 1.1]), np.array([inf, 1.0])) == pytest.approx(0.1)
