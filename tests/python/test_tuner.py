"""The tuner: configuration spaces, successive halving (with a fake timer and
clock), and the rule that a candidate which fails to run or gives wrong values
or NaN is dropped and counted, never returned.

The candidates here are hand-written Triton modules with the emitted modules'
interface, run in Triton's interpreter on CPU tensors, so these tests need
neither a GPU nor the search.
"""

import math

import pytest
import torch

from eqiforge.frontend.result import FrontendResult, InputInfo, OutputInfo
from eqiforge.options import TOLERANCE, make_options
from eqiforge.runtime.launch import Binding
from eqiforge.runtime.search import Candidate
from eqiforge.runtime.tuner import (
    Config,
    HalvingRound,
    NoValidCandidate,
    Tuner,
    block_choices,
    config_space,
    interleave,
    program_dims,
    successive_halving,
)

# ---- successive halving with a fake timer --------------------------------------------


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def noisy(true_time, key, rep_ms):
    """A measurement whose error shrinks with the repetitions: even keys read
    slow, odd keys fast, by 5/rep_ms (50% at 10 ms, 1.9% at 270 ms)."""
    sign = 1 if key % 2 == 0 else -1
    return true_time * (1 + sign * 5.0 / rep_ms)


def test_halving_corrects_noisy_first_round_and_gives_survivors_more_repetitions():
    true = {k: 1.0 + k for k in range(27)}  # key 0 is the fastest
    clock = FakeClock()
    calls = []

    def measure(key, rep_ms):
        calls.append((key, rep_ms))
        clock.now += rep_ms / 1000
        return noisy(true[key], key, rep_ms)

    first = {k: noisy(true[k], k, 10.0) for k in true}
    # At 10 ms the noise ranks key 1 (1.0) ahead of key 0 (1.5).
    assert min(first, key=first.get) == 1
    best, latest, rounds = successive_halving(first, measure, rep_ms=10.0, deadline=100.0, clock=clock, eta=3)
    assert best == 0
    assert rounds == [HalvingRound(30.0, 9, 9), HalvingRound(90.0, 3, 3), HalvingRound(270.0, 1, 1)]
    # Survivors are measured again with three times the repetitions each round.
    assert [rep for _, rep in calls] == [30.0] * 9 + [90.0] * 3 + [270.0]
    assert calls[-1] == (0, 270.0)
    assert latest[0] == pytest.approx(noisy(1.0, 0, 270.0))


def test_halving_stops_at_the_deadline_with_the_best_so_far():
    true = {k: 1.0 + k for k in range(9)}
    clock = FakeClock()

    def measure(key, rep_ms):
        clock.now += 1.0  # each measurement takes a second
        return true[key]

    first = dict(true)
    best, _, rounds = successive_halving(first, measure, rep_ms=10.0, deadline=2.0, clock=clock, eta=3)
    assert best == 0
    assert len(rounds) == 1 and rounds[0].alive == 3 and rounds[0].measured == 2


def test_halving_with_one_item_measures_nothing():
    best, latest, rounds = successive_halving({"a": 1.0}, lambda k, r: pytest.fail("measured"), rep_ms=10.0,
                                              deadline=10.0, clock=FakeClock())
    assert best == "a" and rounds == [] and latest == {"a": 1.0}


def test_halving_needs_a_measured_item():
    with pytest.raises(ValueError):
        successive_halving({}, lambda k, r: 0.0, rep_ms=10.0, deadline=1.0, clock=FakeClock())


# ---- configuration spaces ----------------------------------------------------------


def test_program_dims():
    text = "(program p\n  (dims (m 100) (k 8) (c_t.0 4))\n  (input x f32 [m k]))"
    assert program_dims(text) == {"m": 100, "k": 8, "c_t.0": 4}
    assert program_dims("(program p)") == {}


def test_block_choices_are_capped_by_the_extent():
    choices = block_choices({"m.0": "block_m0", "k.0": "block_k0"}, {"m": 100, "k": 8}, (16, 32, 64, 128, 256))
    assert choices == {"block_m0": [16, 32, 64, 128], "block_k0": [8]}


def test_config_space_puts_the_estimate_first_and_respects_nesting():
    opts = make_options(block_sizes=[16, 32, 64], num_warps=[4, 8], num_stages=[2])
    program = "(program p (dims (m 64) (n 40)))"
    cand = Candidate(3, program, 1e-6, {"m.0": 32, "m.1": 16, "n.0": 64})
    params = {"m.0": "block_m0", "m.1": "block_m1", "n.0": "block_n0"}
    import random

    space = config_space(cand, params, opts, random.Random(0))
    assert space[0] == Config(3, (("block_m0", 32), ("block_m1", 16), ("block_n0", 64)), 4, 2)
    assert len(space) == len(set(space))
    for c in space:
        blocks = dict(c.blocks)
        assert blocks["block_m1"] < blocks["block_m0"]
        assert c.num_warps in (4, 8) and c.num_stages == 2
    # m.0 in {16,32,64} with m.1 smaller: (32,16), (64,16), (64,32); n.0 in {16,32,64}; 2 warps.
    assert len(space) == 3 * 3 * 2
    # Same seed, same order.
    assert config_space(cand, params, opts, random.Random(0)) == space


def test_interleave_round_robins_over_candidates():
    a = [Config(0, (("b", i),)) for i in range(3)]
    b = [Config(1, (("b", i),)) for i in range(1)]
    assert [c.rank for c in interleave([a, b])] == [0, 1, 0, 0]


# ---- the tuner on deliberately broken modules ---------------------------------------

N = 37  # not a multiple of any block size


def module_source(body: str, extra: str = "") -> str:
    return f'''
import torch
import triton
import triton.language as tl

PROGRAM = "scale"
INPUTS = ("x",)
OUTPUTS = ("y",)
M = {N}
BLOCK_PARAMS = {{"m.0": "block_m0"}}
UNIT_AXES = ()


@triton.jit
def y_kernel(x_ptr, y_ptr, M, BLOCK_M0: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_M0 + tl.arange(0, BLOCK_M0)
    mask = offs < M
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = {body}
    tl.store(y_ptr + offs, y, mask=mask)


def forward(x, *, block_m0=None, num_warps=4, num_stages=2):
    block_m0 = 16 if block_m0 is None else block_m0
    {extra}
    y = torch.empty((M,), device=x.device, dtype=torch.float32)
    y_kernel[(triton.cdiv(M, block_m0),)](x, y, M, BLOCK_M0=block_m0, num_warps=num_warps, num_stages=num_stages)
    return (y,)
'''


GOOD = module_source("tl.exp(x) * 2.0")
WRONG = module_source("tl.exp(x) * 3.0")
NAN = module_source("tl.sqrt(-1.0 - tl.exp(x))")
RAISES = module_source("tl.exp(x) * 2.0", extra='raise RuntimeError("launch refused")')
# Right only for some block sizes: a bug that shows at block size 32.
BLOCK_BUG = module_source("tl.exp(x) * 2.0 + (BLOCK_M0 == 32) * 1.0")
PROGRAM = f"(program scale (dims (m {N})) (input x f32 [m]) (output y [m] (mul (exp x) 2)))"


def reference(x):
    return torch.exp(x) * 2


def binding() -> Binding:
    fe = FrontendResult(
        text=PROGRAM,
        name="scale",
        inputs=[InputInfo("x", "arg", 0, (N,), torch.float32, ("m",), (N,))],
        outputs=[OutputInfo("y", (N,), torch.float32, ("m",))],
        dims={"m": N},
        graph=None,
    )
    return Binding(fe)


def candidates(*sources: str) -> list[Candidate]:
    return [Candidate(rank, PROGRAM, 1e-6 * rank, {}, source=src) for rank, src in enumerate(sources, start=1)]


def example():
    return (torch.linspace(-1, 1, N),)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_static_tuner_drops_wrong_and_nan_candidates_and_counts_them():
    tuner = Tuner(binding(), reference, example(), candidates(WRONG, NAN, RAISES, GOOD), make_options(),
                  interpret=True)
    result = tuner.run()
    assert result.best.candidate.rank == 4
    assert result.best.error <= TOLERANCE
    s = result.stats
    assert (s.configs_tried, s.verify_failed, s.run_failed, s.verified) == (4, 2, 1, 1)
    assert s.candidates_dropped == 3
    assert any("candidate 1" in f and "differs from eager" in f for f in s.failures)
    assert any("candidate 2" in f and "NaN" in f for f in s.failures)
    assert any("candidate 3" in f and "launch refused" in f for f in s.failures)
    # The winner's outputs are right on other inputs too.
    x = torch.rand(N) * 4 - 2
    (y,) = result.best.module.forward(x)
    torch.testing.assert_close(y, reference(x))


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_when_every_candidate_fails_nothing_is_returned():
    tuner = Tuner(binding(), reference, example(), candidates(WRONG, NAN), make_options(), interpret=True)
    with pytest.raises(NoValidCandidate) as info:
        tuner.run()
    message = str(info.value)
    assert "2 gave wrong values" in message and "NaN" in message
    assert tuner.stats.verified == 0


def test_a_module_that_does_not_import_is_dropped():
    broken = "import torch\nthis is not python\n"
    tuner = Tuner(binding(), reference, example(), candidates(broken, GOOD), make_options(), interpret=True)
    result = tuner.run()
    assert result.best.candidate.rank == 2
    assert tuner.stats.compile_failed == 1 and "could not be emitted or imported" in tuner.stats.failures[0]


def test_verification_uses_fresh_inputs_not_the_examples():
    # Wrong everywhere except at the example's values: x == linspace(-1, 1).
    sneaky = module_source("tl.where(tl.abs(x) <= 1.0, tl.exp(x) * 2.0, 0.0)")
    examples = (torch.linspace(-3, 3, N),)  # fresh inputs are drawn over [-3, 3]
    tuner = Tuner(binding(), reference, examples, candidates(sneaky, GOOD), make_options(), interpret=True)
    result = tuner.run()
    assert result.best.candidate.rank == 2 and tuner.stats.verify_failed == 1


class FakeTimer:
    """Times by configuration: candidate 2 is faster than 1, small blocks are
    faster; the measurement error shrinks with the repetitions."""

    def __init__(self, clock: FakeClock):
        self.clock = clock
        self.seen = []

    def __call__(self, fn, rep_ms):
        fn()  # the configuration really runs
        c = fn.config
        self.seen.append((c, rep_ms))
        self.clock.now += rep_ms / 1000
        base = {1: 2.0, 2: 1.0}[c.rank] * (1 + dict(c.blocks)["block_m0"] / 100)
        return base * 1e-6


def test_measured_tuner_times_only_verified_configurations():
    clock = FakeClock()
    timer = FakeTimer(clock)
    opts = make_options(block_sizes=[16, 32, 64], num_warps=[4], num_stages=[1], budget_s=30)
    tuner = Tuner(binding(), reference, example(), candidates(GOOD, BLOCK_BUG, WRONG), opts, interpret=True,
                  measure=True, timer=timer, clock=clock, lean=False)
    result = tuner.run()
    best = result.best
    assert best.candidate.rank == 2 and dict(best.config.blocks) == {"block_m0": 16}
    s = result.stats
    # Three configurations each; candidate 2 fails at block 32, candidate 3 everywhere.
    assert s.configs_tried == 3 + 3 + 3
    assert s.verify_failed == 1 + 3 and s.verified == 5
    assert s.candidates_dropped == 1
    timed = {c for c, _ in timer.seen}
    assert all(c.rank != 3 for c in timed), "a wrong candidate was timed"
    assert Config(2, (("block_m0", 32),), 4, 1) not in timed
    # First round at 10 ms, then successive halving with more repetitions.
    assert [r.rep_ms for r in s.rounds] == [30.0, 90.0]
    assert timer.seen[-1] == (best.config, 90.0)


def test_measured_tuner_respects_the_budget():
    clock = FakeClock()

    def slow_timer(fn, rep_ms):
        fn()
        clock.now += 20.0  # every measurement takes 20 s of the 30 s budget
        return 1e-6

    opts = make_options(block_sizes=[16, 32, 64], num_warps=[4], num_stages=[1], budget_s=30)
    tuner = Tuner(binding(), reference, example(), candidates(GOOD, GOOD), opts, interpret=True, measure=True,
                  timer=slow_timer, clock=clock, lean=False)
    result = tuner.run()
    # The first measurement ends past half the budget: no more configurations,
    # and halving has nothing left to compare.
    assert tuner.stats.measurements == 1 and result.stats.rounds == []
    assert math.isclose(result.stats.seconds, 20.0)
