"""The front-end fuzzer (python -m eqiforge.fuzz_torch): random PyTorch
programs through eqiforge.optimize on the CPU, checked against eager; that it
reports wrong values, wrong dtypes and unclear refusals; and the minimized
failures it found, each a regression test."""

import importlib
import importlib.util
import math
import os
import sys
import textwrap
import warnings

os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402

pytest.importorskip("triton")
torch = pytest.importorskip("torch")

ft = importlib.import_module("eqiforge.fuzz_torch")
check = importlib.import_module("eqiforge.check")

CONFIG = ft.MODES["ci"]["config"]
# The CI mode on a fixed seed range: 16 programs, under a minute on 2 cores.
# It holds nn.Modules and functions, and a program with an operator the IR
# cannot express (seed 1001: a partial slice).
CI_SEEDS = range(1000, 1016)


@pytest.fixture(scope="module")
def ci_results():
    return {r.seed: r for r in ft.run(CI_SEEDS, CONFIG, jobs=2)}


def test_ci_mode_finds_no_wrong_result_and_no_crash(ci_results):
    assert sorted(ci_results) == list(CI_SEEDS)
    failures = [r.line() + "\n" + r.detail for r in ci_results.values() if r.status in ft.FAILURES + ("timeout",)]
    assert not failures, "\n".join(failures)
    # Most programs are optimized and checked: a run where capture or the
    # search stopped producing anything must not pass as clean.
    ok = [r for r in ci_results.values() if r.status == "ok"]
    assert len(ok) >= 0.7 * len(CI_SEEDS), {s: r.line() for s, r in ci_results.items() if r.status != "ok"}
    # More than the winner is checked: the other candidates the tuner got.
    assert sum(r.candidates for r in ok) >= 1.5 * len(ok)
    assert max(r.candidates for r in ok) >= 3


def test_ci_mode_refuses_the_operators_the_ir_cannot_express_by_line(ci_results):
    expected = [r for r in ci_results.values() if r.expected_reject]
    assert expected, "the seed range should hold programs with an operator the IR cannot express"
    for r in expected:
        assert r.status in ("rejected", "ok"), r.line()
    rejected = [r for r in expected if r.status == "rejected"]
    assert rejected
    for r in rejected:
        assert "is not supported" in r.detail and "seed" in r.detail and ".py:" in r.detail, r.detail


def test_generated_programs_depend_only_on_the_seed():
    first, again, other = ft.generate(7, CONFIG).source(), ft.generate(7, CONFIG).source(), \
        ft.generate(8, CONFIG).source()
    assert first == again
    assert first != other
    assert "def program(" in first and "INPUTS = [" in first and "SEED = 7" in first
    a, b = ft.make_inputs([("x0", (3, 5), "float32", "normal", 0.0, 1.0)], 3), \
        ft.make_inputs([("x0", (3, 5), "float32", "normal", 0.0, 1.0)], 3)
    assert torch.equal(a[0], b[0])
    assert (a[0].abs() >= 1e-2).all()  # never zero


def test_generator_covers_the_op_families_and_dtypes():
    kinds, dtypes, rejects, extents = set(), set(), 0, set()
    modules = 0
    for seed in range(300):
        prog = ft.generate(seed, CONFIG)
        kinds.update(prog.ops)
        dtypes.update(i.dtype for i in prog.inputs)
        extents.update(s for i in prog.inputs for s in i.shape)
        rejects += prog.reject is not None
        modules += prog.init is not None
    for kind in ("matmul", "linear", "bmm", "addmm", "add", "mul", "div", "exp", "log", "rsqrt", "silu", "sum",
                 "mean", "amax", "var", "softmax", "log_softmax", "layer_norm", "rms_norm", "layer_norm_chain",
                 "rms_norm_chain", "sdpa", "attention", "layout_transpose", "layout_permute", "layout_merge",
                 "layout_split", "layout_squeeze", "layout_expand", "cast", "where", "masked_fill", "tril_triu",
                 "arange", "nn_linear", "nn_layer_norm", "nn_rms_norm", "nn_parameter", "nn_buffer"):
        assert kind in kinds, kind
    assert dtypes == {"float32", "float16", "bfloat16"}
    assert {7, 11, 13} <= extents and 5 <= rejects <= 40 and modules >= 15


def _run_with(monkeypatch, seed, wrap_program=None, wrap_module=None):
    """The fuzzer's check of `seed` with optimize's program (or the other
    candidates' modules) wrapped."""
    import eqiforge
    from eqiforge.runtime import loader

    if wrap_program is not None:
        real = eqiforge.optimize
        monkeypatch.setattr(eqiforge, "optimize", lambda *a, **k: wrap_program(real(*a, **k)))
    if wrap_module is not None:
        real_load = loader.load_module
        monkeypatch.setattr(loader, "load_module", lambda *a, **k: wrap_module(real_load(*a, **k)))
    return ft.check_program(ft.generate(seed, CONFIG), CONFIG)


# A seed whose program is ok and has several candidates (checked below).
CLEAN_SEED = 1003


class _Perturbed:
    """The optimized program with its first output moved by a relative `eps`."""

    def __init__(self, program, eps, dtype=None):
        self._p, self._eps, self._dtype = program, eps, dtype

    def __getattr__(self, name):
        return getattr(self._p, name)

    def __call__(self, *args):
        out = self._p(*args)
        flat = list(out) if isinstance(out, tuple) else [out]
        flat[0] = flat[0] * (1 + self._eps) if self._dtype is None else flat[0].to(self._dtype)
        return tuple(flat) if isinstance(out, tuple) else flat[0]


def test_the_clean_seed_is_ok_with_several_candidates(monkeypatch):
    r = _run_with(monkeypatch, CLEAN_SEED)
    assert r.status == "ok", r.line() + "\n" + r.detail
    assert r.candidates >= 2


def test_a_perturbed_output_is_wrong(monkeypatch):
    r = _run_with(monkeypatch, CLEAN_SEED, wrap_program=lambda p: _Perturbed(p, 1e-3))
    assert r.status == "wrong", r.line()
    assert "optimized program" in r.detail and "tolerance 1e-05" in r.detail


def test_a_perturbation_within_the_tolerance_is_ok(monkeypatch):
    r = _run_with(monkeypatch, CLEAN_SEED, wrap_program=lambda p: _Perturbed(p, 1e-7))
    assert r.status == "ok", r.line()


def test_an_output_of_another_dtype_is_wrong(monkeypatch):
    r = _run_with(monkeypatch, CLEAN_SEED, wrap_program=lambda p: _Perturbed(p, 0.0, torch.float64))
    assert r.status == "wrong" and "torch.float64" in r.detail, r.line()


def test_a_wrong_candidate_that_the_tuner_did_not_pick_is_wrong(monkeypatch):
    class Module:
        def __init__(self, m):
            self._m = m

        def __getattr__(self, name):
            return getattr(self._m, name)

        def forward(self, *args, **kwargs):
            outs = self._m.forward(*args, **kwargs)
            return (outs[0] * 1.01,) + tuple(outs[1:])

    r = _run_with(monkeypatch, CLEAN_SEED, wrap_module=Module)
    assert r.status == "wrong" and "candidate" in r.detail and "optimized program" not in r.detail, r.line()


def test_a_module_that_raises_is_a_crash(monkeypatch):
    class Module:
        def __init__(self, m):
            self._m = m

        def __getattr__(self, name):
            return getattr(self._m, name)

        def forward(self, *args, **kwargs):
            raise RuntimeError("boom")

    r = _run_with(monkeypatch, CLEAN_SEED, wrap_module=Module)
    assert r.status == "crash" and "boom" in r.detail, r.line()


def _handmade(body, inputs, outputs, half=None, reject=None):
    return ft.Program(90000, "ci", body, [ft.InputSpec(*i) for i in inputs], outputs,
                      tuple(half or [False] * len(outputs)), reject)


def test_a_refusal_names_the_operator_and_the_line():
    prog = _handmade(["v1 = torch.exp(x0)", "v2 = torch.cumsum(v1, dim=-1)"],
                     [("x0", (3, 5), "float32", "normal", 0.0, 1.0)], ["v2"], reject=(1, ("cumsum",)))
    r = ft.check_program(prog, CONFIG)
    assert r.status == "rejected", r.line() + r.detail
    assert "aten.cumsum" in r.detail and "seed90000.py:11: v2 = torch.cumsum(v1, dim=-1)" in r.detail


def test_a_refusal_naming_another_line_is_a_crash():
    # The REJECT line is deliberately off by one: the fuzzer must notice.
    prog = _handmade(["v1 = torch.exp(x0)", "v2 = torch.cumsum(v1, dim=-1)"],
                     [("x0", (3, 5), "float32", "normal", 0.0, 1.0)], ["v2"], reject=(0, ("cumsum",)))
    r = ft.check_program(prog, CONFIG)
    assert r.status == "crash" and "not line 10" in r.detail, r.line() + r.detail


def test_tolerances_follow_the_checker():
    f32 = torch.ones(4)
    assert ft.compare_outputs((f32 * (1 + 2e-6),), (f32,), (False,))[0][0] <= check.TOLERANCE_FP32
    errors, tols, reason = ft.compare_outputs((f32 * (1 + 2e-5),), (f32,), (False,))
    assert errors[0] > tols[0] == check.TOLERANCE_FP32 and not reason
    errors, tols, _ = ft.compare_outputs((f32 * (1 + 2e-5),), (f32,), (True,))
    assert tols[0] == check.TOLERANCE_HALF and errors[0] <= tols[0]
    _, tols, _ = ft.compare_outputs((f32.half(),), (f32.half(),), (False,))
    assert tols[0] == check.TOLERANCE_HALF
    errors, _, reason = ft.compare_outputs((torch.ones(2, 2),), (torch.ones(4),), (False,))
    assert math.isinf(errors[0]) and "(2, 2)" in reason
    errors, _, reason = ft.compare_outputs((f32, f32), (f32,), (False,))
    assert math.isinf(errors[0]) and "2 outputs" in reason
    errors, _, reason = ft.compare_outputs((f32,), f32, (False,))  # a 1-tuple for a tensor
    assert math.isinf(errors[0]) and "TreeSpec" in reason
    assert not ft.within_noise({0: 2e-5}, {0: 1e-5}, {0: (1e-7, 1e-7)})
    assert ft.within_noise({0: 2e-5}, {0: 1e-5}, {0: (1e-5, 0.0)})
    assert not ft.within_noise({0: 2e-3}, {0: 1e-5}, {0: (1e-3, 0.0)})  # past the cap


def test_a_saved_program_checks_itself(tmp_path):
    import subprocess

    path = tmp_path / "seed5.py"
    path.write_text(ft.generate(5, CONFIG).source())
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("seed 5: ")


# ---- regressions: the bugs the fuzzer found ------------------------------------------


def test_refusal_names_the_line_of_a_function_whose_module_is_not_importable(tmp_path):
    """Fuzzer seed 0: a function from a file imported without an entry in
    sys.modules cannot be traced by TorchDynamo (it imports the module), so
    capture fell back to non-strict export, which keeps the stack frames of
    functions named `forward` only: "aten.cat is not supported" without the
    line."""
    from eqiforge.frontend import UnsupportedOpError, to_ir

    path = tmp_path / "unregistered_module.py"
    path.write_text(textwrap.dedent("""\
        import torch


        def program(x):
            y = torch.exp(x)
            return torch.cat([y, y], dim=-1)
    """))
    spec = importlib.util.spec_from_file_location("unregistered_module_for_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "unregistered_module_for_test" not in sys.modules
    with pytest.raises(UnsupportedOpError) as e:
        to_ir(module.program, torch.randn(3, 4))
    assert e.value.op == "aten.cat"
    assert e.value.location == "unregistered_module.py:6"
    assert e.value.source == "return torch.cat([y, y], dim=-1)"


def test_bf16_matmul_verifies_on_the_cpu_path():
    """Fuzzer seed 7: Triton's interpreter multiplies bf16 dot operands as
    their uint16 bit patterns (eqiforge.check worked around it, the runtime's
    CPU path did not): every candidate of F.linear on bf16 inputs was 1.7e10
    off, and optimize raised NoValidCandidate."""
    import eqiforge

    def linear(x, w):
        return torch.nn.functional.linear(x, w) * 0.0625

    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, 11, generator=g).bfloat16()
    w = torch.randn(2, 11, generator=g).bfloat16()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = eqiforge.optimize(linear, x, w, cache=False, top_k=2)
    x2 = torch.randn(8, 11, generator=g).bfloat16()
    w2 = torch.randn(2, 11, generator=g).bfloat16()
    got, want = fast(x2, w2), linear(x2, w2)
    assert got.dtype == torch.bfloat16
    assert check.relative_error(got.double().numpy(), want.double().numpy()) <= check.TOLERANCE_HALF


def test_a_constant_condition_from_a_decomposition_is_folded():
    """Fuzzer seed 149: PyTorch decomposes torch.lerp(a, b, 0.25) into
    where(0.25 < 0.5, a + w (b - a), b - (b - a)(1 - w)); the condition is a
    literal term, not a number, and `where` read its `.value`
    (AttributeError); folded, the chosen branch of another dtype than the
    result made `pick` raise StopIteration."""
    import eqiforge
    from eqiforge.frontend import to_ir

    def lerps(a, b):
        return torch.lerp(a, b, 0.25) * 2, torch.lerp(a, b, 0.75) * 2, torch.where(torch.tensor(True), a, b) + 1

    a, b = torch.randn(3, 4), torch.rand(3, 4) + 0.5
    text = to_ir(lerps, a, b).text
    assert "where" not in text  # the constant conditions are folded away
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = eqiforge.optimize(lerps, a, b, cache=False, top_k=1)
    a2, b2 = torch.randn(3, 4), torch.rand(3, 4) + 0.5
    for got, want in zip(fast(a2, b2), lerps(a2, b2)):
        assert check.relative_error(got.double().numpy(), want.double().numpy()) <= check.TOLERANCE_FP32


def test_logic_on_constant_masks_is_folded():
    from eqiforge.frontend import to_ir

    def masks(x):
        always = torch.tensor(True)
        return torch.where(always & (x > 0), x, 0.0) + torch.where(~always | (x < 0), x, 1.0)

    r = to_ir(masks, torch.randn(4, 5))
    assert r.text.count("(where") == 2


def test_a_refused_op_of_a_decomposition_names_the_users_op():
    """Fuzzer seed 134: torch.roll is decomposed into arange, fmod and
    index_select; the refusal named aten.fmod, which the program does not
    use."""
    from eqiforge.frontend import UnsupportedOpError, to_ir

    def rolled(x):
        y = torch.exp(x)
        return torch.roll(y, 1, -1)

    with pytest.raises(UnsupportedOpError) as e:
        to_ir(rolled, torch.randn(3, 4))
    assert e.value.op == "aten.roll"
    assert str(e.value).startswith("aten.roll is not supported: PyTorch decomposes it into aten.")
    assert e.value.source == "return torch.roll(y, 1, -1)"


def test_lerp_of_a_transposed_value_is_translated():
    """Fuzzer seed 10057: PyTorch's decomposition of torch.lerp(x, x.transpose(-1, 0), w)
    restores the memory layout with prims.copy_strided, which the table
    lacked ("aten.lerp is not supported: PyTorch decomposes it into
    prims.copy_strided")."""
    import eqiforge

    def lerp_t(x):
        return torch.lerp(x, torch.transpose(x, -1, 0), 0.25) * 2

    x = torch.randn(4, 5, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = eqiforge.optimize(lerp_t, x, cache=False, top_k=1)
    x2 = torch.randn(4, 5, 4)
    got, want = fast(x2), lerp_t(x2)
    assert check.relative_error(got.double().numpy(), want.double().numpy()) <= check.TOLERANCE_FP32


def test_candidates_wrong_on_verification_are_wrong_unless_the_output_is_numerically_zero(monkeypatch):
    """Seed 10074 sums a layer-normalized row (exactly 0, rounding in float32):
    optimize's verification refuses every candidate, and the fuzzer records
    it as no candidate, naming the numerically zero output; a candidate
    refused for values that are wrong is a wrong result."""
    r = ft.check_program(ft.generate(10074, CONFIG), CONFIG)
    assert r.status == "no-candidate" and ("numerically zero" in r.detail or "off its float64 evaluation" in r.detail), \
        r.line()
    assert ft._verification_failed("3 configurations tried: 0 failed to compile, 0 failed to run, "
                                   "3 gave wrong values; 3 of 3 candidates dropped")
    assert not ft._verification_failed("2 configurations tried: 2 failed to compile, 0 failed to run, "
                                       "0 gave wrong values")
    from eqiforge.runtime import tuner

    real = tuner.compare

    def wrong(outputs, references, names=None):  # every candidate off by 10%
        return real([o * 1.1 for o in outputs], references, names)

    monkeypatch.setattr(tuner, "compare", wrong)
    r = ft.check_program(ft.generate(CLEAN_SEED, CONFIG), CONFIG)
    assert r.status == "wrong" and r.stage == "verify", r.line()


def test_elu_selu_and_sign_are_translated():
    """F.elu / F.selu (aten.elu) and torch.sign were the front end's most
    frequent refusals of supported-looking programs in the campaigns."""
    import eqiforge
    import torch.nn.functional as F

    def f(x, y):
        return F.elu(x) * 2, F.selu(x), torch.sign(x) * y, F.elu(x, alpha=0.5).half(), torch.sign(x.half()) + 1

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(5, 7, generator=g), torch.randn(5, 7, generator=g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = eqiforge.optimize(f, x, y, cache=False, top_k=1)
    x2, y2 = torch.randn(5, 7, generator=g), torch.randn(5, 7, generator=g)
    x2[1, 1] = 0.0  # sign(0) = 0
    for got, want in zip(fast(x2, y2), f(x2, y2)):
        assert got.dtype == want.dtype
        tol = check.TOLERANCE_HALF if want.dtype == torch.float16 else check.TOLERANCE_FP32
        assert check.relative_error(got.double().numpy(), want.double().numpy()) <= tol


def test_a_bf16_chain_is_held_to_the_float64_evaluation_not_to_eagers_rounding(monkeypatch):
    """Seed 10302: a chain of bf16 ops on a bf16 input, which eager rounds to
    bf16 after every op and the kernels only where they store. The optimized
    program equals the float64 evaluation rounded to bf16; eager is 1.6% off
    it, past the 1e-2 tolerance. Ok within the noise floor -- and an output 5%
    off is still wrong."""
    prog = ft.generate(10302, CONFIG)
    assert {i.dtype for i in prog.inputs} == {"bfloat16"}
    r = ft.check_program(prog, CONFIG)
    assert r.status == "ok" and r.noise, r.line()
    r = _run_with(monkeypatch, 10302, wrap_program=lambda p: _Perturbed(p, 0.05))
    assert r.status == "wrong", r.line()


def test_a_bf16_log_is_held_to_the_ir_where_eager_rounds_its_argument(monkeypatch):
    """Seed 10489: log2(sigmoid(v) + 0.1) of a bf16 norm. Eager rounds the
    argument of the log to bf16 (1% on the result: 2 ulps), the kernel keeps
    it in f32, as the IR evaluates it; the optimized program is within 1e-2
    of the interpreter's float64 evaluation of the front end's IR, and eager
    within 5e-2 of it: ok within the noise floor. 5% off is still wrong."""
    r = ft.check_program(ft.generate(10489, CONFIG), CONFIG)
    assert r.status == "ok" and r.noise, r.line()
    r = _run_with(monkeypatch, 10489, wrap_program=lambda p: _Perturbed(p, 0.05))
    assert r.status == "wrong", r.line()


def test_eager_nan_on_the_verification_inputs_is_no_candidate_not_wrong():
    """Seed 10479 (rsqrt(v2 * mean(v2)) of a negative value): eager gives NaN on
    optimize's verification inputs, so nothing can be verified there;
    optimize refuses, and the fuzzer records no candidate, saying why."""
    r = ft.check_program(ft.generate(10479, CONFIG), CONFIG)
    assert r.status == "no-candidate", r.line() + "\n" + r.detail
    assert "has NaN on the verification inputs" in r.detail, r.detail
    # The reason comes only from eager: a finite program has none.
    import torch

    def finite(x):
        return torch.tanh(x) * 2

    example = (torch.randn(8),)
    assert "NaN" not in ft._verification_noise(finite, example, {"seed": 3}, (False,))
