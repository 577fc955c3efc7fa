"""The eqiforge._core bindings, through the package's re-exports."""

import re

import numpy as np
import pytest

import eqiforge
from programs import NAIVE, OTHER_EXTENT, TILED, WRONG

POSITION = re.compile(r"^bad\.eqf:\d+:\d+: error: ")


def test_check_lists_outputs_with_types():
    assert eqiforge.typecheck(NAIVE) == [("c", "f32[m n]")]


def test_print_program_is_canonical_and_stable():
    text = eqiforge.print_program(TILED)
    assert "(tile_matmul k" in text
    assert eqiforge.print_program(text) == text
    # Printing keeps the meaning: the printed form is equivalent to the source.
    assert eqiforge.equiv(TILED, text, trials=2) == 0.0


def test_axes():
    assert eqiforge.axes(NAIVE) == []
    assert eqiforge.axes(TILED) == ["k.0"]


def test_random_inputs_are_seeded_and_in_range():
    x = eqiforge.random_inputs(NAIVE, seed=7)
    y = eqiforge.random_inputs(NAIVE, seed=7)
    z = eqiforge.random_inputs(NAIVE, seed=8)
    assert list(x) == ["a", "b"]
    assert x["a"].shape == (3, 5) and x["b"].shape == (5, 2)
    assert x["a"].dtype == np.float64
    np.testing.assert_array_equal(x["a"], y["a"])
    assert not np.array_equal(x["a"], z["a"])
    assert np.all(x["a"] >= -1) and np.all(x["a"] < 1)


def test_evaluate_matches_numpy_on_random_inputs():
    inputs = eqiforge.random_inputs(NAIVE, seed=3)
    out = eqiforge.evaluate(NAIVE, seed=3)
    assert list(out) == ["c"]
    assert out["c"].shape == (3, 2)
    np.testing.assert_allclose(out["c"], inputs["a"] @ inputs["b"], rtol=1e-12, atol=0)


def test_evaluate_on_given_inputs_converts_to_float64():
    a = np.arange(15, dtype=np.float32).reshape(3, 5) / 7
    b = np.linspace(-1, 1, 10).reshape(5, 2)
    out = eqiforge.evaluate(NAIVE, inputs={"a": a, "b": b})
    np.testing.assert_allclose(out["c"], a.astype(np.float64) @ b, rtol=1e-12, atol=0)


@pytest.mark.parametrize("block", [1, 2, 3, 4, 5])
def test_tiled_form_equals_naive_for_every_block_size(block):
    # Block sizes 2, 3 and 4 leave a ragged last block of k = 5.
    naive = eqiforge.evaluate(NAIVE, seed=11)
    tiled = eqiforge.evaluate(TILED, seed=11, blocks={"k.0": block})
    np.testing.assert_allclose(tiled["c"], naive["c"], rtol=1e-12, atol=1e-15)


def test_equiv_accepts_tiled_form_and_rejects_wrong_one():
    assert eqiforge.equiv(NAIVE, TILED, seed=0, trials=6) <= eqiforge.TOLERANCE
    # WRONG is twice NAIVE: relative to NAIVE the error is exactly 1.
    assert eqiforge.equiv(NAIVE, WRONG, trials=2) == pytest.approx(1.0, rel=1e-12)


def test_irerror_is_a_valueerror():
    assert issubclass(eqiforge.IRError, ValueError)


def test_syntax_error_has_position():
    bad = "(program p\n  (dims (m 2))\n  (input x f32 [m])\n  (output y [m] (add x)))\n"
    with pytest.raises(eqiforge.IRError) as info:
        eqiforge.typecheck(bad, "bad.eqf")
    assert POSITION.match(str(info.value)), str(info.value)
    assert "add" in str(info.value)


def test_type_error_has_position():
    bad = "(program p\n  (dims (m 2))\n  (input x f32 [m])\n  (input y f16 [m])\n  (output z [m] (add x y)))\n"
    with pytest.raises(eqiforge.IRError) as info:
        eqiforge.typecheck(bad, "bad.eqf")
    assert POSITION.match(str(info.value)), str(info.value)
    # The printer does not type-check: the same text still prints.
    assert "(add x y)" in eqiforge.print_program(bad)


def test_bad_block_sizes_raise():
    with pytest.raises(eqiforge.IRError, match="m.0"):
        eqiforge.evaluate(TILED, blocks={"m.0": 2})  # TILED has no axis m.0
    with pytest.raises(eqiforge.IRError, match="k.0"):
        eqiforge.evaluate(TILED, blocks={"k.0": 0})
    with pytest.raises(eqiforge.IRError, match="not an axis"):
        eqiforge.evaluate(TILED, blocks={"k": 2})


def test_bad_inputs_raise():
    a = np.zeros((3, 5))
    with pytest.raises(eqiforge.IRError, match="'b'"):
        eqiforge.evaluate(NAIVE, inputs={"a": a})
    with pytest.raises(eqiforge.IRError, match=r"shape \(5, 3\)"):
        eqiforge.evaluate(NAIVE, inputs={"a": a.T.copy(), "b": np.zeros((5, 2))})
    with pytest.raises(eqiforge.IRError, match="'q' is not an input"):
        eqiforge.evaluate(NAIVE, inputs={"a": a, "b": np.zeros((5, 2)), "q": a})


def test_equiv_needs_the_same_interface():
    with pytest.raises(eqiforge.IRError, match="input 'a' has dims"):
        eqiforge.equiv(NAIVE, OTHER_EXTENT)
    with pytest.raises(eqiforge.IRError, match="trials"):
        eqiforge.equiv(NAIVE, TILED, trials=0)
