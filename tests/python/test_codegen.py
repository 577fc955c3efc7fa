"""Emitted Triton modules, run with Triton's interpreter on CPU tensors,
against the reference interpreter (eqiforge.check): every tiled example at
its own sizes with several block sizes (ragged ones included), the 3-D
fallback of tile_matmul, strided inputs, fp16, every pointwise op, and the
errors for programs that have no kernel form."""

import os
import re
import subprocess
from pathlib import Path

# Triton decides at import time whether its own library functions
# (tl.cdiv, tl.sum, ...) are interpreted: set this before importing it.
os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402

pytest.importorskip("triton")
torch = pytest.importorskip("torch")

import importlib  # noqa: E402

import eqiforge  # noqa: E402
from programs import TWO_LEVELS  # noqa: E402

# The kernel checker is the submodule eqiforge.check (python -m eqiforge.check).
check = importlib.import_module("eqiforge.check")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
# Hand-written tiled forms: every example but the naive ones and the
# (naive, paper-sized) workloads.
TILED = sorted(
    str(p.relative_to(EXAMPLES))
    for p in EXAMPLES.glob("*/*.eqf")
    if p.name != "naive.eqf" and p.parent.name != "workloads"
)
WORKLOADS = sorted(p.name for p in (EXAMPLES / "workloads").glob("*.eqf"))
NAIVE = sorted(str(p.relative_to(EXAMPLES)) for p in EXAMPLES.glob("*/naive.eqf"))
TOL = check.TOLERANCE_FP32


def text_of(name):
    return (EXAMPLES / name).read_text()


@pytest.fixture(scope="module")
def modules():
    """Emitted modules, loaded once per (program text, unit axes)."""
    cache = {}

    def get(text, unit_axes=None):
        key = (text, None if unit_axes is None else tuple(unit_axes))
        if key not in cache:
            os.environ["TRITON_INTERPRET"] = "1"
            cache[key] = check.load_module(check.emit(text, unit_axes), f"m{len(cache)}")
        return cache[key]

    return get


def assert_close(trials, tol=TOL):
    for t in trials:
        for name, err in t.errors.items():
            assert err <= tol, f"{name}: relative error {err:.3g} with blocks {t.blocks}"


def test_every_tiled_example_is_covered():
    assert len(TILED) >= 10, TILED


@pytest.mark.parametrize("name", TILED)
def test_example_defaults_and_random_blocks(name, modules):
    # Trial 0: the module's default block sizes; trials 1..3: random ones,
    # mostly not dividing the extents.
    text = text_of(name)
    assert_close(check.check_program(text, seed=11, trials=4, module=modules(text)))


# Hand-picked sizes: blocks of 1, blocks larger than the dim, non-powers of two.
FIXED = {
    "matmul/split_k.eqf": [{"m.0": 1, "k.0": 20, "n.0": 3}, {"m.0": 5, "k.0": 1, "n.0": 16}],
    "matmul/split_k_two_levels.eqf": [{"m.0": 12, "k.0": 7, "k.1": 3}, {"m.0": 3, "k.0": 20, "k.1": 1}],
    "attention/flash.eqf": [{"s.0": 1, "t.0": 13}, {"s.0": 10, "t.0": 3}, {"s.0": 6, "t.0": 16}],
    "attention_decode/flash_decoding.eqf": [{"t.0": 1}, {"t.0": 29}, {"t.0": 7}],
    "attention_decode/split_channels.eqf": [{"t.0": 5, "f.0": 3}, {"t.0": 29, "f.0": 1}],
    "rmsnorm_mlp/factor_after_fused.eqf": [{"k.0": 24, "n.0": 7}, {"k.0": 5, "n.0": 20}],
    "lora/two_kernels.eqf": [{"k.0": 7, "n.0": 3, "r.0": 3}, {"k.0": 24, "n.0": 20, "r.0": 1}],
    "lora/one_kernel.eqf": [{"k.0": 9, "n.0": 6}],
    "layernorm/one_pass_tuple.eqf": [{"m.0": 2, "k.0": 5}, {"m.0": 5, "k.0": 23}],
    "layernorm/one_pass_welford.eqf": [{"m.0": 3, "k.0": 1}, {"m.0": 1, "k.0": 6}],
}


@pytest.mark.parametrize("name,blocks", [(n, b) for n, bs in FIXED.items() for b in bs])
def test_example_fixed_blocks(name, blocks, modules):
    text = text_of(name)
    assert_close(check.check_program(text, seed=5, trials=1, blocks=blocks, module=modules(text)))


@pytest.mark.parametrize(
    "name,blocks",
    [
        ("attention/flash.eqf", {"h.0": 2, "s.0": 3, "t.0": 5}),
        ("attention_decode/flash_decoding.eqf", {"h.0": 2, "t.0": 6}),
        ("attention_decode/split_channels.eqf", {"h.0": 3, "t.0": 8, "f.0": 5}),
    ],
)
def test_heads_in_the_tile_use_the_broadcast_contraction(name, blocks, modules):
    # Without unit axes the head dim stays in the tiles: 3-D operands, so
    # tile_matmul is a broadcast product and tl.sum instead of tl.dot.
    text = text_of(name)
    module = modules(text, [])
    assert "tl.dot(" not in Path(module.__file__).read_text()
    assert_close(check.check_program(text, seed=2, trials=2, blocks=blocks, module=module))


@pytest.mark.parametrize(
    "name,units,blocks",
    [
        # k.1 of block 1 inside ragged k.0 blocks: its single position can be
        # past the end of k, so the squeezed dim keeps a scalar mask.
        ("matmul/split_k_two_levels.eqf", ["k.1"], {"m.0": 5, "k.0": 7}),
        ("matmul/split_k.eqf", ["k.0", "m.0"], {"n.0": 4}),
        ("layernorm/one_pass_welford.eqf", ["k.0"], {"m.0": 2}),
        ("attention/flash.eqf", ["h.0", "t.0"], {"s.0": 4}),
    ],
)
def test_unit_axes_on_reduced_dims(name, units, blocks, modules):
    text = text_of(name)
    assert_close(check.check_program(text, seed=4, trials=2, blocks=blocks, module=modules(text, units)))


def test_strided_inputs(modules):
    # Inputs are used through their strides: a transposed view and a slice.
    text = text_of("attention/flash.eqf")
    module = modules(text)
    inputs = eqiforge.random_inputs(text, seed=4)
    want = eqiforge.evaluate(text, seed=4, blocks={"h.0": 1, "s.0": 4, "t.0": 8}, inputs=inputs)["o"]
    q = torch.tensor(inputs["q"], dtype=torch.float32)
    q_strided = q.transpose(1, 2).contiguous().transpose(1, 2)  # [h s e] with e outermost in memory
    k = torch.tensor(inputs["k"], dtype=torch.float32)
    k_padded = torch.zeros(k.shape[0], k.shape[1], k.shape[2] + 5)
    k_padded[:, :, : k.shape[2]] = k
    k_slice = k_padded[:, :, : k.shape[2]]  # row stride larger than the row
    v = torch.tensor(inputs["v"], dtype=torch.float32)
    assert not q_strided.is_contiguous() and not k_slice.is_contiguous()
    (o,) = module.forward(q_strided, k_slice, v, block_s0=4, block_t0=8)
    assert check.relative_error(o.double().numpy(), want) <= TOL


def test_fp16_program_within_half_tolerance(modules):
    text = text_of("attention/flash.eqf").replace(" f32 ", " f16 ")
    assert check.tolerance_for(text) == check.TOLERANCE_HALF
    module = modules(text)
    source = Path(module.__file__).read_text()
    assert "tl.float16" in source  # the contractions run on fp16 operands
    assert_close(check.check_program(text, seed=1, trials=2, module=module), check.TOLERANCE_HALF)


def test_a_tile_against_its_buffers_layout_is_loaded_in_the_layout_and_fed_to_dot_as_loaded(modules):
    # w is [k1 k] in memory while the kernel orders its tiles (m, k, k1): the
    # tile is loaded in w's order and reaches tl.dot without a transpose
    # (Triton's pipeliner keeps such a load synchronous, through registers).
    text = """(program gemv (dims (m 16) (k 40) (k1 48)) (input x f16 [m k1]) (input w f16 [k1 k])
  (output y [m k] (combine k.0 k (preduce k1.0 + (tile_matmul k1 (partition k1.0 k1 (replicate k.0 x))
                                                                 (partition k1.0 k1 (partition k.0 k w)))))))"""
    module = modules(text)
    source = Path(module.__file__).read_text()
    assert re.search(r"w_ptr \+ offs_k1\[:, None\] \* stride_w_k1 \+ offs_k\[None, :\] \* stride_w_k", source), source
    assert "tl.dot(x_tile, w_tile)" in source and "tl.trans" not in source, source
    trials = check.check_program(text, seed=2, trials=3, module=module)
    assert_close(trials, check.TOLERANCE_HALF)


GEMVS = {
    # The vector on the left of a [k, n] weight (LoRA's three products, the
    # adapter's with the weight transposed in the kernel's dim order).
    "vector_left": ("""(program lora (dims (k 64) (n 32) (k1 16))
  (input x f16 [k]) (input w f16 [k n]) (input a f16 [k k1]) (input b f16 [k1 n])
  (let t0 (partition k.1 k (partition k.0 k (replicate n.0 x))))
  (let t1 (preduce k.0 (+ +) (preduce k.1 (+ +) (tuple
      (tile_matmul k t0 (partition k.1 k (partition k.0 k (partition n.0 n w))))
      (tile_matmul k t0 (partition k.1 k (partition k.0 k (replicate n.0 a))))))))
  (output out [n] (combine n.0 n (add (proj 0 t1) (tile_matmul k1 (proj 1 t1) (partition n.0 n b))))))""", 3),
    # A bf16 [n, k] matrix times the vector on its right.
    "vector_right": ("""(program mv (dims (k 40) (n 24)) (input w bf16 [n k]) (input x bf16 [k])
  (output y [n] (combine n.0 n (preduce k.0 + (tile_matmul k (partition k.0 k (partition n.0 n w))
                                                             (partition k.0 k (replicate n.0 x)))))))""", 1),
}


@pytest.mark.parametrize("name", sorted(GEMVS))
def test_a_gemv_has_a_tl_dot_form_that_gemv_dot_switches_on(modules, name):
    text, count = GEMVS[name]
    module = modules(text)
    source = Path(module.__file__).read_text()
    assert module.LAUNCH_FORMS == ("gemv_dot",)
    # Each GEMV: a tl.dot of the vector padded to 16 rows under GEMV_DOT, a
    # multiply and sum otherwise.
    assert source.count("tl.dot(") == count and source.count("if GEMV_DOT else tl.sum(") == count, source
    assert "GEMV_DOT=gemv_dot" in source and "gemv_dot=False" in source
    # check_program runs both forms on the same inputs, blocks under 16 and
    # ragged ones included (the dot form pads their tiles to 16).
    trials = []
    for blocks in ({"k.0": 32, "k.1": 8, "n.0": 8}, {"k.0": 64, "k.1": 16, "n.0": 32}, {}):
        blocks = {a: b for a, b in blocks.items() if a in eqiforge.axes(text)}
        trials += check.check_program(text, seed=3, trials=2, blocks=blocks, module=module)
    assert sorted({tuple(t.forms) for t in trials}) == [(), ("gemv_dot",)]
    assert_close(trials, check.TOLERANCE_HALF)


def test_a_program_without_gemvs_has_no_launch_forms(modules):
    text = """(program gemm (dims (m 16) (k 40) (n 48)) (input x f16 [m k]) (input w f16 [k n])
  (output y [m n] (combine n.0 n (tile_matmul k (replicate n.0 x) (partition n.0 n w)))))"""
    module = modules(text)
    assert module.LAUNCH_FORMS == () and "gemv_dot" not in Path(module.__file__).read_text()


def test_a_dim_named_like_another_dims_inner_axis_gets_its_own_tile_name(modules):
    # Dim k1 (whole) and axis k.1 (a block of a block of k) both made
    # TILE_K1, and the kernel repeated a parameter: a SyntaxError the tuner
    # reported for LoRA candidates (rank 16 adapter dim k1, split K).
    text = """(program lora (dims (k 64) (n 32) (k1 16))
  (input x f16 [k]) (input w f16 [k n]) (input a f16 [k k1]) (input b f16 [k1 n])
  (let t0 (partition k.1 k (partition k.0 k (replicate n.0 x))))
  (let t1 (preduce k.0 (+ +) (preduce k.1 (+ +) (tuple
      (tile_matmul k t0 (partition k.1 k (partition k.0 k (partition n.0 n w))))
      (tile_matmul k t0 (partition k.1 k (partition k.0 k (replicate n.0 a))))))))
  (output out [n] (combine n.0 n (add (proj 0 t1) (tile_matmul k1 (proj 1 t1) (partition n.0 n b))))))"""
    module = modules(text)
    source = Path(module.__file__).read_text()
    assert "TILE_K1: tl.constexpr" in source and "TILE_K1_2: tl.constexpr" in source, source
    trials = check.check_program(text, seed=6, trials=3, blocks={"k.0": 32, "k.1": 8, "n.0": 16}, module=module)
    assert_close(trials, check.TOLERANCE_HALF)


FLATTENED_DOTS = {
    # w's n split into whole h x e (16 columns): one tl.dot of x by the
    # reshaped [k, h*e] tile, reshaped back.
    "cols": """(program flat_cols (dims (m 8) (k 40) (n 16) (h 4) (e 4))
  (input x DT [m k]) (input w DT [k n])
  (output y [m h e] (combine m.0 m (tile_matmul k (partition m.0 m x) (replicate m.0 (split n h e w))))))""",
    # The rows side flattened, h padded (3 -> 4): 32 rows.
    "rows": """(program flat_rows (dims (h 3) (e 8) (k 40) (n 24) (p 20))
  (input xt DT [k n]) (input w DT [k p])
  (output y [h e p] (combine p.0 p (tile_matmul k (replicate p.0 (split n h e xt)) (partition p.0 p w)))))""",
    # k between the columns' dims in kernel order (mHC's connection: e, k1,
    # h): the tile is permuted to put k first, and the result to (m, e, h).
    "k-inside": """(program flat_k_inside (dims (m 8) (e 4) (k 40) (n 16) (h 4))
  (input x DT [m k]) (input w DT [k n])
  (output y [m h e] (combine m.0 m (tile_matmul k (partition m.0 m x) (replicate m.0 (split n h e w))))))""",
    # Columns before rows in kernel order: the dot's result is transposed.
    "cols-first": """(program flat_cols_first (dims (h 4) (e 4) (k 40) (n 16) (m 8))
  (input x DT [m k]) (input w DT [k n])
  (output y [m h e] (combine m.0 m (tile_matmul k (partition m.0 m x) (replicate m.0 (split n h e w))))))""",
}


@pytest.mark.parametrize("dtype", ["f16", "f32"])
@pytest.mark.parametrize("name", sorted(FLATTENED_DOTS))
def test_a_run_of_whole_dims_beside_k_is_flattened_into_one_dot(name, dtype, modules):
    text = FLATTENED_DOTS[name].replace("DT", dtype)
    module = modules(text)
    source = Path(module.__file__).read_text()
    assert "tl.dot(" in source and "tl.reshape(" in source and "tl.sum(" not in source, source
    tol = check.TOLERANCE_HALF if dtype == "f16" else TOL
    assert_close(check.check_program(text, seed=5, trials=3, module=module), tol)


def test_a_run_too_small_for_a_dot_stays_a_broadcast_product(modules):
    # h x e = 8 columns cannot be padded once flattened: tl.sum of a product.
    text = FLATTENED_DOTS["cols"].replace("DT", "f32").replace("(n 16) (h 4)", "(n 8) (h 2)")
    module = modules(text)
    source = Path(module.__file__).read_text()
    assert "tl.dot(" not in source and "tl.sum(" in source, source
    assert_close(check.check_program(text, seed=5, trials=2, module=module))


def test_programs_wholly_before_a_window_read_nothing(modules):
    # The grid index mask: key blocks before the window (scores -inf) load
    # nothing; at blocks of 4, 6 of the 10 programs are dead.
    text = text_of("attention_window/flash_decoding.eqf")
    module = modules(text)
    source = Path(module.__file__).read_text()
    kernel = source[source.index("def states_kernel"):source.index("def o_kernel")]
    assert "live = " in kernel and kernel.count("tl.where(live, ") == 3, kernel
    assert "live" not in source[source.index("def o_kernel"):]
    for blocks in ({"h.0": 1, "t.0": 4}, {"h.0": 2, "t.0": 1}, {"h.0": 3, "t.0": 64}):
        assert_close(check.check_program(text, seed=3, trials=1, module=module, blocks=blocks))


# The window example's mask written other ways: either edge, the literal in
# either branch, a shifted index, slope 2, both edges at once. Each form's
# dead programs (live false) must store what the reference computes.
WINDOW_RAW = "(mul (tile_matmul e q_tile k_tile) (rsqrt 8))"
WINDOW_MASKS = {
    "before": f"(where (lt pos 25) -inf {WINDOW_RAW})",
    "after": f"(where (le 9 pos) -inf {WINDOW_RAW})",
    "literal-else": f"(where (le 25 pos) {WINDOW_RAW} -inf)",
    "shifted": f"(where (lt (sub pos 3) 17) -inf {WINDOW_RAW})",
    "slope-2": f"(where (lt (mul pos 2) 41) -inf {WINDOW_RAW})",
    "two-edged": f"(where (mul (lt pos 30) (lt 11 pos)) {WINDOW_RAW} -inf)",
}


@pytest.mark.parametrize("form", sorted(WINDOW_MASKS))
def test_every_form_of_a_window_mask_reads_only_live_blocks(form, modules):
    base = text_of("attention_window/flash_decoding.eqf")
    scores = "(where (lt pos 25) -inf (mul (tile_matmul e q_tile k_tile) (rsqrt 8)))"
    assert scores in base
    text = base.replace(scores, WINDOW_MASKS[form])
    module = modules(text)
    source = Path(module.__file__).read_text()
    assert "live = " in source, source
    for seed, blocks in enumerate(({"h.0": 1, "t.0": 1}, {"h.0": 2, "t.0": 4}, {"h.0": 3, "t.0": 7},
                                   {"h.0": 1, "t.0": 16})):
        assert_close(check.check_program(text, seed=seed, trials=1, module=module, blocks=blocks))


POINTWISE = {
    "add": "(add xt 0.5)", "sub": "(sub 0.5 xt)", "mul": "(mul xt xt)", "div": "(div xt 1.5)",
    "max2": "(max2 xt 0.1)", "min2": "(min2 xt 0.1)", "neg": "(neg xt)", "exp": "(exp xt)",
    "log": "(log (add xt 2))", "sqrt": "(sqrt (add xt 2))", "rsqrt": "(rsqrt (add xt 2))",
    "sigmoid": "(sigmoid xt)", "silu": "(silu xt)", "gelu": "(gelu xt)", "tanh": "(tanh xt)",
    "pow2": "(pow 2 xt)", "pow3": "(pow 3 xt)", "pow-1": "(pow -1 (add xt 2))", "pow0.5": "(pow 0.5 (add xt 2))",
    "pow1.5": "(pow 1.5 (add xt 2))", "pow5": "(pow 5 xt)", "pow6": "(pow 6 xt)",
    "lt": "(where (lt xt 0) xt 0.25)", "le": "(where (le xt 0) 1.0 xt)", "eq": "(where (eq xt xt) xt 0)",
    "cast": "(cast f32 xt)", "where-iota": "(where (lt (partition m.0 m (iota m)) 3) xt (neg xt))",
    "sum": "(add xt (sum k xt))", "max": "(sub xt (max k xt))",
}


@pytest.mark.parametrize("op", sorted(POINTWISE))
def test_each_op(op, modules):
    text = f"""(program ops (dims (m 7) (k 5)) (input x f32 [m k])
      (let xt (partition m.0 m x))
      (output y [m k] (combine m.0 m {POINTWISE[op]})))"""
    assert_close(check.check_program(text, seed=3, trials=2, module=modules(text)))


def test_small_resizes_a_large_program():
    big = text_of("attention/flash.eqf").replace("(dims (h 2) (s 10) (t 13) (e 8) (f 6))",
                                                 "(dims (h 16) (s 4096) (t 4096) (e 64) (f 64))")
    small = check.resize_small(big, seed=1)
    dims = check.program_dims(small)
    assert all(v <= 13 for v in dims.values()), dims
    assert check.main([str(EXAMPLES / "attention/flash.eqf"), "--small", "--trials", "1"]) == 0


@pytest.mark.parametrize("name", NAIVE)
def test_naive_examples_run_as_one_program(name, modules):
    text = text_of(name)
    assert_close(check.check_program(text, seed=3, trials=1, module=modules(text)))


@pytest.mark.parametrize("name", WORKLOADS)
def test_small_workloads(name, modules):
    # Paper-sized naive workloads re-sized small: one program on whole tiles.
    text = check.resize_small((EXAMPLES / "workloads" / name).read_text(), seed=7)
    assert_close(check.check_program(text, seed=7, trials=1, module=modules(text)), check.tolerance_for(text))


def _stored_pointers(module_text):
    """Per kernel of an emitted module, the pointer names its tl.store calls
    write through (the address expression starts with the pointer, on the
    call's line or the next)."""
    bodies = re.findall(r"def (\w+_kernel)\((.*?)(?=\n@triton\.jit|\ndef forward)", module_text, re.S)
    return {kernel: set(re.findall(r"tl\.store\(\s*(\w+_ptr)\b", body)) for kernel, body in bodies}


def test_independent_kernels_of_a_level_run_in_one_fused_launch(modules):
    from eqiforge.runtime.launch import record_launches

    module = modules(TWO_LEVELS)
    assert module.LAUNCH_FORMS == ("separate_launches",)
    assert module.FUSED == {"fused0_kernel": ("a_kernel", "b_kernel"), "fused1_kernel": ("y_kernel", "z_kernel")}
    inputs = [torch.randn(6, 20), torch.randn(20, 12), torch.randn(20, 12)]
    blocks = {"block_m0": 4, "block_n0": 8}
    fused, launches = record_launches(module, inputs, blocks)
    assert [r.kernel for r in launches] == ["fused0_kernel", "fused1_kernel"]
    assert [r.grid for r in launches] == [(2 * 2 + 2,), (2 + 2,)]
    separate, launches = record_launches(module, inputs, {**blocks, "separate_launches": True})
    assert [r.kernel for r in launches] == ["a_kernel", "b_kernel", "y_kernel", "z_kernel"]
    assert all(torch.equal(f, s) for f, s in zip(fused, separate))
    # Both forms against the reference interpreter, ragged blocks and blocks
    # of 1 included (members of different program counts).
    trials = []
    for blocks in ({"m.0": 4, "n.0": 8}, {"m.0": 1, "n.0": 5}, {"m.0": 8, "n.0": 16}, {}):
        trials += check.check_program(TWO_LEVELS, seed=4, trials=1, blocks=blocks, module=module)
    assert sorted({tuple(t.forms) for t in trials}) == [(), ("separate_launches",)]
    assert_close(trials)
    # Read from the text, the module's kernels are its four, not the fused ones.
    from eqiforge.runtime.search import kernels_from_module

    kernels = kernels_from_module(Path(module.__file__).read_text())
    assert [k.name for k in kernels] == ["a_kernel", "b_kernel", "y_kernel", "z_kernel"]
    assert kernels[0].grid == ["n.0", "m.0"] and "tile_matmul" in kernels[0].ops


# Three independent kernels whose tiles differ in size: a's tl.dot pads its
# e and m.0 tiles to 16, b (e whole) and c (m.0 blocks) do not.
PADS = """(program pads (dims (m 6) (k 32) (e 4))
  (input x f32 [m k]) (input w f32 [k e])
  (output a [m e] (combine m.0 m (tile_matmul k (partition m.0 m x) (replicate m.0 w))))
  (output b [e] (sum k (mul w w)))
  (output c [m] (combine m.0 m (sum k (partition m.0 m x)))))"""


def test_members_of_a_fused_launch_keep_their_own_tile_sizes(modules):
    module = modules(PADS)
    source = Path(module.__file__).read_text()
    assert module.FUSED == {"fused0_kernel": ("a_kernel", "b_kernel", "c_kernel")}
    # b and c get tile constexprs of their own where a pads to 16, and c the
    # EVEN_ flag computed with its own tile.
    assert "TILE_E_PLAIN=triton.next_power_of_2(E)" in source
    assert "TILE_M0_PLAIN=triton.next_power_of_2(block_m0)" in source
    assert "EVEN_M0_PLAIN=M % block_m0 == 0 and triton.next_power_of_2(block_m0) == block_m0" in source
    trials = []
    for block in (1, 2, 4, 5, 16):
        trials += check.check_program(PADS, seed=8, trials=1, blocks={"m.0": block}, module=module)
    assert sorted({tuple(t.forms) for t in trials}) == [(), ("separate_launches",)]
    assert_close(trials)


@pytest.mark.parametrize("name", TILED + ["attention_decode/naive.eqf", "rmsnorm_mlp/naive.eqf", "mla/naive.eqf",
                                          "two_levels"])
def test_the_writes_table_names_every_pointer_each_kernel_stores_through(name):
    # The lean launch path lets kernels that share no written buffer run side
    # by side in a captured graph: a pointer missing here would race. A fused
    # kernel stores through every pointer its members do.
    text = check.emit(TWO_LEVELS if name == "two_levels" else text_of(name))
    namespace = {}
    exec(re.search(r"^WRITES = .*$", text, re.M).group(0), namespace)
    stored = _stored_pointers(text)
    assert stored and set(namespace["WRITES"]) == set(stored)
    for kernel, ptrs in namespace["WRITES"].items():
        assert set(ptrs) == stored[kernel], kernel


GOLDEN = {
    "attention_flash.py": "attention/flash.eqf",
    "attention_decode_flash_decoding.py": "attention_decode/flash_decoding.eqf",
    "rmsnorm_mlp_factor_after_fused.py": "rmsnorm_mlp/factor_after_fused.eqf",
}


@pytest.mark.parametrize("golden", sorted(GOLDEN))
def test_golden_modules_compute_their_programs(golden):
    # The C++ tests keep the golden texts stable; this keeps them right.
    path = ROOT / "tests" / "golden" / golden
    text = text_of(GOLDEN[golden])
    assert check.emit(text, source=f"examples/{GOLDEN[golden]}").split("\n", 1)[1] == path.read_text().split("\n", 1)[1]
    module = check.load_module(path.read_text(), "golden_" + golden[:-3])
    assert_close(check.check_program(text, seed=9, trials=2, module=module))


def test_emit_verb_writes_the_module(tmp_path):
    out = tmp_path / "kernels.py"
    done = subprocess.run([check._emitter(), "emit", str(EXAMPLES / "lora/one_kernel.eqf"), "-o", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "def forward(x, w, a, b, *, block_k0=None, block_n0=None" in out.read_text()
    bad = subprocess.run([check._emitter(), "emit", str(EXAMPLES / "lora/one_kernel.eqf"), "--unit-axes", "k"],
                         capture_output=True, text=True)
    assert bad.returncode == 2
    assert "--unit-axes expects axes such as h.0" in bad.stderr


def test_a_wrong_module_fails_the_check():
    # The check must be able to fail: a module whose output is off by a bit.
    text = text_of("lora/one_kernel.eqf")
    module = check.load_module(check.emit(text), "wrong")
    forward = module.forward
    module.forward = lambda *a, **kw: tuple(o * (1 + 1e-3) for o in forward(*a, **kw))
    trials = check.check_program(text, trials=1, module=module)
    assert trials[0].max_error > TOL


def test_unsupported_structure_is_an_error_naming_the_node(tmp_path, capsys):
    bad = tmp_path / "bad.eqf"
    bad.write_text("""(program t (dims (m 4) (k 6)) (input x f32 [m k])
      (output y [m] (preduce k.0 + (combine m.0 m (sum k (partition m.0 m (partition k.0 k x)))))))""")
    assert check.main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert re.search(r"bad\.eqf:2:\d+: error: lowering: combine of m\.0 inside a kernel", err), err
