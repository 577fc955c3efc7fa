"""The tuner: configuration spaces (the estimate's blocks first, neighbours
within the cost model's legal range), successive halving (with a fake timer
and clock), the rule that a candidate which fails to run or gives wrong values
or NaN is dropped and counted, never returned, and the rule that a
configuration which fails to compile drops that configuration, not its
candidate.

The candidates here are hand-written Triton modules with the emitted modules'
interface, run in Triton's interpreter on CPU tensors, so these tests need
neither a GPU nor the search.
"""

import io
import math

import pytest
import torch

from eqiforge.frontend.result import FrontendResult, InputInfo, OutputInfo
from eqiforge.options import TOLERANCE, make_options
from eqiforge.runtime.launch import Binding
from eqiforge.runtime.progress import Progress
from eqiforge.runtime.search import Candidate
from eqiforge.runtime.tuner import (
    Config,
    HalvingRound,
    NoValidCandidate,
    SEPARATE,
    Tuner,
    code_signature,
    make_space,
    neighbours,
    program_dims,
    shrink,
    start_config,
    start_configs,
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


def test_errors_from_inside_tritons_compiler_are_compile_errors():
    from triton.runtime.errors import OutOfResources

    from eqiforge.runtime.tuner import _is_compile_error, _is_out_of_resources

    oor = OutOfResources(262144, 232448, "shared memory")
    assert _is_compile_error(oor) and _is_out_of_resources(oor)
    # An MLIR pass that fails raises a plain RuntimeError from the compiler.
    code = compile("def lower():\n    raise RuntimeError('PassManager::run failed')\n",
                   "/site-packages/triton/compiler/compiler.py", "exec")
    scope = {}
    exec(code, scope)
    with pytest.raises(RuntimeError) as info:
        scope["lower"]()
    assert _is_compile_error(info.value) and not _is_out_of_resources(info.value)
    assert not _is_compile_error(RuntimeError("launch refused"))


def test_program_dims():
    text = "(program p\n  (dims (m 100) (k 8) (c_t.0 4))\n  (input x f32 [m k]))"
    assert program_dims(text) == {"m": 100, "k": 8, "c_t.0": 4}
    assert program_dims("(program p)") == {}


NESTED = {"m.0": "block_m0", "m.1": "block_m1", "n.0": "block_n0", "h.0": "block_h0"}


def nested_space(estimate=None, **opts):
    options = make_options(**{"block_sizes": [16, 32, 64], "num_warps": [2, 4, 8], "num_stages": [1, 2, 3], **opts})
    return make_space(3, NESTED, {"m": 100, "n": 40, "h": 1}, options, estimate)


def test_space_caps_blocks_at_the_next_power_of_two_of_the_extent():
    space = nested_space()
    assert space.caps == {"block_m0": 128, "block_m1": 128, "block_n0": 64, "block_h0": 1}
    assert space.outer == {"block_m1": "block_m0"}
    # Outer levels before inner ones.
    assert space.keywords.index("block_m0") < space.keywords.index("block_m1")
    # An estimate is legal by the cost model's rules: no cap below it.
    assert make_space(1, {"x.0": "block_x0"}, {}, make_options(), {"x.0": 1024}).caps == {"block_x0": 1024}


def test_start_config_is_exactly_the_estimate():
    estimate = {"m.0": 4, "m.1": 4, "n.0": 2048, "h.0": 1, "b.0": 1}  # b.0: a unit axis, not a keyword
    cand = Candidate(3, "(program p)", 1e-6, estimate)
    space = nested_space(estimate)
    config = start_config(cand, NESTED, space)
    assert config == Config(3, (("block_h0", 1), ("block_m0", 4), ("block_m1", 4), ("block_n0", 2048)), 4, 3)
    # Options without 4 warps or 3 stages: the nearest allowed values.
    other = nested_space(estimate, num_warps=[8, 16], num_stages=[4, 5])
    assert (start_config(cand, NESTED, other).num_warps, start_config(cand, NESTED, other).num_stages) == (8, 4)
    # The estimate's stages when it has them, the nearest allowed otherwise.
    deep = Candidate(3, "(program p)", 1e-6, estimate, stages=5)
    assert start_config(deep, NESTED, nested_space(estimate, num_stages=[3, 4, 5])).num_stages == 5
    assert start_config(deep, NESTED, nested_space(estimate, num_stages=[2, 3, 4])).num_stages == 4
    # Axes the estimate leaves out get the emitted module's defaults.
    bare = start_config(Candidate(3, "(program p)", None, {}), NESTED, nested_space())
    assert dict(bare.blocks) == {"block_m0": 64, "block_m1": 32, "block_n0": 64, "block_h0": 1}


def test_neighbours_stay_legal_and_come_in_a_fixed_order():
    space = nested_space()
    c = Config(3, (("block_h0", 1), ("block_m0", 32), ("block_m1", 32), ("block_n0", 64)), 4, 2)
    ns = neighbours(c, space)
    assert ns == neighbours(c, space) and c not in ns and len(ns) == len(set(ns))
    blocks = [dict(n.blocks) for n in ns]
    for n, b in zip(ns, blocks):
        assert all(v >= 1 and v & (v - 1) == 0 for v in b.values()), "blocks are powers of two"
        assert all(b[k] <= space.caps[k] for k in b)
        assert b["block_m1"] <= b["block_m0"]
        assert b["block_h0"] == 1
        # One step: one block doubled or halved, or warps or stages changed.
        changed = [k for k in b if b[k] != dict(c.blocks)[k]]
        assert len(changed) <= 2 and (changed or (n.num_warps, n.num_stages) != (4, 2))
    assert blocks[0] == {"block_h0": 1, "block_m0": 64, "block_m1": 32, "block_n0": 64}  # m0 doubled first
    # Halving m.0 halves m.1 with it (an inner level is never larger).
    assert {"block_h0": 1, "block_m0": 16, "block_m1": 16, "block_n0": 64} in blocks
    # m.1 cannot grow past m.0, n.0 not past its cap.
    assert not any(b["block_m1"] == 64 and b["block_m0"] == 32 for b in blocks)
    assert not any(b["block_n0"] == 128 for b in blocks)
    assert [(n.num_warps, n.num_stages) for n in ns[-4:]] == [(8, 2), (2, 2), (4, 3), (4, 1)]


def test_a_launch_form_with_an_estimate_of_its_own_starts_there_too():
    estimate = {"m.0": 8, "m.1": 8, "n.0": 8, "h.0": 1}
    cand = Candidate(3, "(program p)", 1e-6, estimate, stages=3,
                     form_starts={"gemv_dot": ({"m.0": 64, "m.1": 32, "n.0": 64, "h.0": 1}, 5)})
    options = make_options(block_sizes=[16, 32, 64], num_warps=[2, 4, 8], num_stages=[1, 2, 3, 4, 5])
    space = make_space(3, NESTED, {"m": 100, "n": 40, "h": 1}, options, estimate, forms=("gemv_dot",))
    first, dot = start_configs(cand, NESTED, space)
    assert first == start_config(cand, NESTED, space) and first.forms == ()
    assert dot == Config(3, (("block_h0", 1), ("block_m0", 64), ("block_m1", 32), ("block_n0", 64)), 4, 5,
                         ("gemv_dot",))
    # A module without the form (LAUNCH_FORMS empty): its start only.
    assert start_configs(cand, NESTED, make_space(3, NESTED, {"m": 100, "n": 40, "h": 1}, options, estimate)) == [first]


def test_a_launch_form_is_switched_first_and_kept_by_every_other_step():
    options = make_options(block_sizes=[16, 32, 64], num_warps=[2, 4, 8], num_stages=[1, 2, 3])
    space = make_space(3, NESTED, {"m": 100, "n": 40, "h": 1}, options, forms=("gemv_dot",))
    c = Config(3, (("block_h0", 1), ("block_m0", 32), ("block_m1", 32), ("block_n0", 64)), 4, 2)
    ns = neighbours(c, space)
    assert ns[0] == Config(3, c.blocks, 4, 2, ("gemv_dot",)) and ns[0].params()["gemv_dot"] is True
    assert all(n.forms == () for n in ns[1:])
    assert "gemv_dot" not in c.params() and "gemv_dot=True" in ns[0].describe()
    # From the switched form, its neighbours keep it except the switch back.
    back = neighbours(ns[0], space)
    assert back[0] == c and all(n.forms == ("gemv_dot",) for n in back[1:])
    assert shrink(Config(3, c.blocks, 4, 3, ("gemv_dot",)), space, out_of_resources=False).forms == ("gemv_dot",)
    # A module without LAUNCH_FORMS: no such step.
    assert all(n.forms == () for n in neighbours(c, nested_space()))


def test_shrink_lowers_stages_first_then_halves_the_largest_block():
    space = nested_space()
    c = Config(3, (("block_h0", 1), ("block_m0", 128), ("block_m1", 64), ("block_n0", 64)), 4, 3)
    fewer_stages = shrink(c, space, out_of_resources=True)
    assert fewer_stages == Config(3, c.blocks, 4, 1)
    smaller = shrink(fewer_stages, space, out_of_resources=True)
    assert dict(smaller.blocks) == {"block_h0": 1, "block_m0": 64, "block_m1": 64, "block_n0": 64}
    # Blocks of 16 or less do not shrink the (padded) tiles: nothing left.
    tiny = Config(3, (("block_h0", 1), ("block_m0", 16), ("block_m1", 8), ("block_n0", 16)), 4, 1)
    assert shrink(tiny, space, out_of_resources=True) is None
    # Past START_STAGES, to START_STAGES first: pipelining is kept.
    deep = Config(3, c.blocks, 4, 5)
    assert shrink(deep, space, out_of_resources=True) == Config(3, c.blocks, 4, 3)


def test_a_form_switched_and_shrinking_keeps_the_forms():
    options = make_options(block_sizes=[16, 32, 64], num_warps=[2, 4, 8], num_stages=[1, 2, 3])
    space = make_space(3, NESTED, {"m": 100, "n": 40, "h": 1}, options, forms=("gemv_dot", "separate_launches"))
    c = Config(3, (("block_h0", 1), ("block_m0", 64), ("block_m1", 32), ("block_n0", 64)), 4, 3, ("gemv_dot",))
    split = c.switched("separate_launches")
    assert split == Config(3, c.blocks, 4, 3, ("gemv_dot", "separate_launches"))
    assert split.params()["separate_launches"] is True and split.switched("separate_launches") == c
    # Shrinking changes stages, then blocks, never the forms (the tuner splits
    # a failed fused launch itself, Tuner._split).
    assert shrink(c, space, out_of_resources=True) == Config(3, c.blocks, 4, 1, c.forms)
    assert shrink(split, space, out_of_resources=True) == Config(3, c.blocks, 4, 1, split.forms)


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
# Right too, with other code (the tuner times candidates with the same code once).
GOOD_2 = module_source("2.0 * tl.exp(x)")
GOOD_3 = module_source("tl.exp(x) + tl.exp(x)")
WRONG = module_source("tl.exp(x) * 3.0")
NAN = module_source("tl.sqrt(-1.0 - tl.exp(x))")
RAISES = module_source("tl.exp(x) * 2.0", extra='raise RuntimeError("launch refused")')
# Right only for some block sizes: a bug that shows at block size 32.
BLOCK_BUG = module_source("tl.exp(x) * 2.0 + (BLOCK_M0 == 32) * 1.0")


def too_large_above(limit: int) -> str:
    """A right module whose configurations with blocks above `limit` fail to
    compile as Triton's do when a tile exceeds the shared memory."""
    return module_source(
        "tl.exp(x) * 2.0",
        extra=f"if block_m0 > {limit}: raise triton.runtime.errors.OutOfResources(block_m0 * 4096, 232448, "
              '"shared memory")',
    )


NEVER_COMPILES = too_large_above(0)
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


def candidates(*sources: str, blocks: list[dict] | None = None) -> list[Candidate]:
    blocks = blocks or [{}] * len(sources)
    return [Candidate(rank, PROGRAM, 1e-6 * rank, dict(b), source=src)
            for rank, (src, b) in enumerate(zip(sources, blocks), start=1)]


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


def fused_form_wrong() -> str:
    """A module with the separate_launches form whose default (fused) form
    gives wrong values."""
    src = module_source("tl.exp(x) * 2.0", extra="if not separate_launches: y = None")
    src = src.replace("def forward(x, *, block_m0=None, num_warps=4, num_stages=2):",
                      'LAUNCH_FORMS = ("separate_launches",)\n\n\n'
                      "def forward(x, *, block_m0=None, num_warps=4, num_stages=2, separate_launches=False):")
    return src.replace("    return (y,)", "    return (y * (1.0 if separate_launches else 1.5),)")


def fused_form_too_large() -> str:
    """A module with the separate_launches form whose fused form fails to
    compile at every size, as Triton's does when a kernel exceeds the shared
    memory."""
    src = fused_form_wrong().replace("    return (y * (1.0 if separate_launches else 1.5),)", "    return (y,)")
    return src.replace("if not separate_launches: y = None",
                       "if not separate_launches: raise triton.runtime.errors.OutOfResources(1 << 20, 232448, "
                       '"shared memory")')


def test_a_fused_launch_that_fails_to_compile_is_first_retried_as_separate_launches():
    tuner, _, _ = measured_tuner([fused_form_too_large()], blocks=[{"m.0": 32}])
    result = tuner.run()
    fused = Config(1, (("block_m0", 32),), 4, 2)
    # The first retry is the same sizes in separate launches, not a smaller configuration.
    assert tried(tuner)[:2] == [fused, fused.switched(SEPARATE)]
    assert tuner.history[0][1] == "failed to compile" and tuner.history[1][1] == "verified"
    assert SEPARATE in result.best.config.forms


def test_a_fused_launch_that_fails_is_retried_as_separate_launches_at_the_same_sizes():
    tuner = Tuner(binding(), reference, example(), candidates(fused_form_wrong(), blocks=[{"m.0": 32}]),
                  make_options(), interpret=True)
    result = tuner.run()
    assert result.best.config.forms == ("separate_launches",)
    assert dict(result.best.config.blocks) == {"block_m0": 32}
    assert tuner.stats.verify_failed == 1 and tuner.stats.verified == 1
    assert result.best.error <= TOLERANCE
    # Timed: the same retry in the first phase; the fused form never verifies.
    tuner, _, _ = measured_tuner([fused_form_wrong()], blocks=[{"m.0": 32}])
    result = tuner.run()
    assert result.best.config.forms == ("separate_launches",)
    assert all(SEPARATE in c.forms for c, verdict in tuner.history if verdict == "verified")


def test_verification_uses_fresh_inputs_not_the_examples():
    # Wrong everywhere except at the example's values: x == linspace(-1, 1).
    sneaky = module_source("tl.where(tl.abs(x) <= 1.0, tl.exp(x) * 2.0, 0.0)")
    examples = (torch.linspace(-3, 3, N),)  # fresh inputs are drawn over [-3, 3]
    tuner = Tuner(binding(), reference, examples, candidates(sneaky, GOOD), make_options(), interpret=True)
    result = tuner.run()
    assert result.best.candidate.rank == 2 and tuner.stats.verify_failed == 1


class FakeTimer:
    """Times by configuration: candidate 2 is faster than 1, smaller blocks are
    faster; each measurement advances the clock by its repetitions."""

    def __init__(self, clock: FakeClock, speed=None):
        self.clock = clock
        self.speed = speed or {1: 2.0, 2: 1.0, 3: 1.5}
        self.seen = []

    def __call__(self, fn, rep_ms):
        fn()  # the configuration really runs
        c = fn.config
        self.seen.append((c, rep_ms))
        self.clock.now += rep_ms / 1000
        return self.speed[c.rank] * (1 + dict(c.blocks)["block_m0"] / 100) * 1e-6


def measured_tuner(sources, blocks=None, timer=None, progress=None, **opts):
    clock = FakeClock()
    timer = timer or FakeTimer(clock)
    options = make_options(**{"block_sizes": [16, 32, 64], "num_warps": [4], "num_stages": [1, 2], "budget_s": 30,
                              **opts})
    tuner = Tuner(binding(), reference, example(), candidates(*sources, blocks=blocks), options, interpret=True,
                  measure=True, timer=timer, clock=clock, lean=False, progress=progress)
    return tuner, timer, clock


def tried(tuner):
    return [c for c, _ in tuner.history]


def test_every_candidate_is_first_tried_at_its_estimate_before_any_exploration():
    estimates = [{"m.0": 16}, {"m.0": 32}, {"m.0": 8}]
    tuner, timer, _ = measured_tuner([GOOD, GOOD_2, GOOD_3], blocks=estimates)
    result = tuner.run()
    order = tried(tuner)
    assert order[:3] == [Config(r, (("block_m0", b["m.0"]),), 4, 2) for r, b in enumerate(estimates, start=1)]
    # Each timed once at its estimate before any neighbour was tried.
    assert [c for c, _ in timer.seen[:3]] == order[:3] and {rep for _, rep in timer.seen[:3]} == {10.0}
    # Then neighbours (halved blocks, other stages) of the fastest: candidate 2,
    # whose small blocks are fastest, ends at block 1.
    assert all(c not in order[:3] for c in order[3:]) and len(order) == len(set(order))
    assert order[3].rank == 2
    assert result.best.candidate.rank == 2 and dict(result.best.config.blocks) == {"block_m0": 1}
    assert result.stats.explored == len(order) - 3 and result.stats.candidates_dropped == 0
    # The same run again tries the same configurations in the same order.
    again, _, _ = measured_tuner([GOOD, GOOD_2, GOOD_3], blocks=estimates)
    again.run()
    assert tried(again) == order


def test_measured_tuner_times_only_verified_configurations():
    tuner, timer, _ = measured_tuner([GOOD, BLOCK_BUG, WRONG], blocks=[{"m.0": 64}, {"m.0": 64}, {"m.0": 16}])
    result = tuner.run()
    best = result.best
    s = result.stats
    # Candidate 2, the fastest, is wrong only at block 32, the neighbour of
    # its estimate on the way down: that configuration is dropped, not the
    # candidate, whose other neighbours are tried.
    assert (Config(2, (("block_m0", 32),), 4, 2), "wrong values") in tuner.history
    assert best.candidate.rank == 2 and dict(best.config.blocks)["block_m0"] == 64
    timed = {c for c, _ in timer.seen}
    assert all(c.rank != 3 for c in timed), "a wrong candidate was timed"
    assert not any(c.rank == 2 and dict(c.blocks)["block_m0"] == 32 for c in timed)
    # Candidate 3 gives wrong values at its estimate: dropped, not retried.
    assert [c for c in tried(tuner) if c.rank == 3] == [Config(3, (("block_m0", 16),), 4, 2)]
    assert s.candidates_dropped == 1
    wrong = [c for c, what in tuner.history if what == "wrong values"]
    assert s.verify_failed == len(wrong) and all(c.rank == 3 or dict(c.blocks)["block_m0"] == 32 for c in wrong)
    assert s.verified == s.measurements - sum(r.measured for r in s.rounds)  # each verified one timed once first
    # Successive halving at the end: more repetitions for the survivors.
    assert s.rounds and [r.rep_ms for r in s.rounds] == [30.0 * 3 ** i for i in range(len(s.rounds))]
    assert s.rounds[-1].alive == 1 and timer.seen[-1] == (best.config, s.rounds[-1].rep_ms)


def test_a_configuration_that_does_not_compile_drops_only_that_configuration():
    # Candidate 1, the fastest, compiles only with blocks of 16 or less; its estimate is 64.
    out = io.StringIO()
    clock = FakeClock()

    def timer(fn, rep_ms):
        # Fastest at block 16 with 2 stages; candidate 1 faster than 2.
        fn()
        clock.now += rep_ms / 1000
        c = fn.config
        return (1 + abs(math.log2(dict(c.blocks)["block_m0"]) - 4)) * (0.9 if c.num_stages == 2 else 1) * c.rank

    tuner, _, _ = measured_tuner([too_large_above(16), GOOD], blocks=[{"m.0": 64}, {"m.0": 64}], timer=timer,
                                 progress=Progress(verbose=1, stream=out), num_stages=[1, 2])
    tuner.clock = clock
    result = tuner.run()
    order = tried(tuner)
    first = [c for c in order if c.rank == 1]
    # Retried smaller: fewer stages, then halved blocks, until one compiles;
    # candidate 2's estimate was tried before candidate 1's retries.
    assert first[:4] == [Config(1, (("block_m0", 64),), 4, 2), Config(1, (("block_m0", 64),), 4, 1),
                         Config(1, (("block_m0", 32),), 4, 1), Config(1, (("block_m0", 16),), 4, 1)]
    assert order[:3] == [first[0], Config(2, (("block_m0", 64),), 4, 2), first[1]]
    assert dict(tuner.history)[first[3]] == "verified"
    s = result.stats
    assert s.candidates_dropped == 0 and s.compile_failed == 3
    assert [what for _, what in tuner.history].count("failed to compile") == 3
    assert result.best.config == Config(1, (("block_m0", 16),), 4, 2)
    # Configurations at least as large as one that ran out of resources are
    # not tried: block 32 with 2 stages, a neighbour of the best, is skipped.
    assert s.configs_skipped >= 1 and Config(1, (("block_m0", 32),), 4, 2) not in order
    assert all(dict(c.blocks)["block_m0"] <= 16 for c in first[3:])
    # Every failure is reported as it happens, with its cause.
    log = out.getvalue()
    assert "candidate 1 (block_m0=64, num_warps=4, num_stages=2): failed to compile: OutOfResources: " \
           "out of resource: shared memory" in log
    assert sum("failed to compile" in line for line in log.splitlines()) == 3
    assert any("failed to compile: OutOfResources" in f for f in s.failures)


def test_a_candidate_is_dropped_only_when_none_of_its_configurations_compiles():
    tuner, _, _ = measured_tuner([NEVER_COMPILES, GOOD], blocks=[{"m.0": 64}, {"m.0": 32}])
    result = tuner.run()
    assert result.best.candidate.rank == 2
    s = result.stats
    ones = [what for c, what in tuner.history if c.rank == 1]
    # Retried smaller until the limit of failed compilations (4), then dropped.
    assert ones == ["failed to compile"] * 4
    assert s.candidates_dropped == 1 and s.candidates_untried == 0

    tuner, _, _ = measured_tuner([NEVER_COMPILES], blocks=[{"m.0": 64}])
    with pytest.raises(NoValidCandidate) as info:
        tuner.run()
    message = str(info.value)
    assert "4 configurations tried: 4 failed to compile, 0 failed to run, 0 gave wrong values" in message
    assert "1 of 1 candidates dropped" in message and "OutOfResources" in message


def test_the_budget_leaves_candidates_untried_and_says_so():
    clock = FakeClock()

    def slow_timer(fn, rep_ms):
        fn()
        clock.now += 26.0  # past the exploration share of the 30 s budget
        return 1e-6

    opts = make_options(block_sizes=[16, 32, 64], num_warps=[4], num_stages=[1], budget_s=30)
    tuner = Tuner(binding(), reference, example(), candidates(GOOD, GOOD_2), opts, interpret=True, measure=True,
                  timer=slow_timer, clock=clock, lean=False)
    result = tuner.run()
    # The first measurement ends past the exploration share: no more
    # configurations, and halving has nothing left to compare.
    assert tuner.stats.measurements == 1 and result.stats.rounds == []
    assert result.stats.candidates_untried == 1 and result.stats.candidates_dropped == 0
    assert math.isclose(result.stats.seconds, 26.0)


def test_no_candidate_within_the_budget_is_an_error_that_counts_the_untried():
    clock = FakeClock()

    def slow_source(cand):
        clock.now += 20.0  # emitting and loading takes 20 s of the 30 s budget
        return NEVER_COMPILES.replace("tl.exp(x) * 2.0", f"tl.exp(x) * {cand.rank + 1}.0 / {cand.rank + 1}.0 * 2.0")

    opts = make_options(num_warps=[4], num_stages=[1], budget_s=30)
    tuner = Tuner(binding(), reference, example(), candidates(GOOD, GOOD, GOOD, blocks=[{"m.0": 64}] * 3), opts,
                  interpret=True, measure=True, timer=FakeTimer(clock), clock=clock, lean=False,
                  source_of=slow_source)
    with pytest.raises(NoValidCandidate) as info:
        tuner.run()
    assert "2 configurations tried: 2 failed to compile" in str(info.value)
    assert "2 of 3 candidates dropped, 1 not tried within the budget of 30 s" in str(info.value)


def test_candidates_with_the_same_code_are_tried_once():
    # Candidate 2 differs from 1 in its docstring and comments only (as
    # programs distinct in the IR can lower to the same kernels): not timed.
    same = GOOD.replace('PROGRAM = "scale"', '"""Another program."""\n# a comment\nPROGRAM = "scale"')
    assert same != GOOD and code_signature(same) == code_signature(GOOD)
    assert code_signature(GOOD_2) != code_signature(GOOD)
    tuner, _, _ = measured_tuner([GOOD, same, GOOD_2], blocks=[{"m.0": 16}] * 3)
    result = tuner.run()
    assert result.stats.duplicates == 1
    assert {c.rank for c in tried(tuner)} == {1, 3}
    assert result.stats.candidates_dropped == 0



def test_the_candidates_take_at_most_their_share_of_the_budget_and_neighbours_get_the_rest():
    clock = FakeClock()

    def timer(fn, rep_ms):
        fn()
        clock.now += 3.0  # each configuration takes 3 s of the 30 s budget
        return (1 + dict(fn.config.blocks)["block_m0"] / 100) * 1e-6

    estimates = [{"m.0": 64}] * 4
    sources = [GOOD.replace("tl.exp(x) * 2.0", f"tl.exp(x) * {r}.0 / {r}.0 * 2.0") for r in range(2, 6)]
    opts = make_options(block_sizes=[16, 32, 64], num_warps=[4], num_stages=[1], budget_s=30)
    tuner = Tuner(binding(), reference, example(), candidates(*sources, blocks=estimates), opts, interpret=True,
                  measure=True, timer=timer, clock=clock, lean=False)
    result = tuner.run()
    order = tried(tuner)
    # Phase 1 stops at 40% of the budget (12 s: four configurations of 3 s
    # start before it), then the neighbours of the fastest are explored.
    firsts = [c for c in order if dict(c.blocks)["block_m0"] == 64]
    assert [c.rank for c in firsts] == [1, 2, 3, 4]
    assert result.stats.explored >= 1 and any(dict(c.blocks)["block_m0"] == 32 for c in order)
    assert result.stats.candidates_untried == 0

    clock.now = 0.0
    many = Tuner(binding(), reference, example(),
                 candidates(*(sources + [GOOD_2, GOOD_3]), blocks=[{"m.0": 64}] * 6), opts, interpret=True,
                 measure=True, timer=timer, clock=clock, lean=False)
    result = many.run()
    assert result.stats.candidates_untried == 2 and result.stats.explored >= 1
