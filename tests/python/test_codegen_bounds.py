"""Loop bounds from index masks: the emitted key loop of causal and
sliding-window attention visits exactly the key blocks that hold a visible
(query, key) pair for the program's query rows, and the kernels stay correct
for ragged extents and blocks (Triton's interpreter against the reference
interpreter)."""

import math
import os
import re
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402

pytest.importorskip("triton")
pytest.importorskip("torch")

import importlib  # noqa: E402

check = importlib.import_module("eqiforge.check")

ROOT = Path(__file__).resolve().parents[2]
CAUSAL = ROOT / "examples" / "attention_causal" / "flash.eqf"
TOL = check.TOLERANCE_FP32


def causal_text():
    return CAUSAL.read_text()


def window_text(width=4):
    text = causal_text().replace("(program attention_causal", "(program attention_window")
    old = "(let visible (le key_index query_index))"
    assert old in text
    return text.replace(old, f"(let visible (mul (le key_index query_index) (lt (sub query_index key_index) {width})))")


def negated_text():
    """The causal mask as the rules also write it: negated, the fill first."""
    text = causal_text()
    for old, new in [("(let visible (le key_index query_index))",
                      "(let visible (eq (cast i32 (le (sub key_index query_index) 0)) 0))"),
                     ("(let scores (where visible (mul (tile_matmul e q_tile k_tile) (rsqrt 8)) -inf))",
                      "(let scores (where visible -inf (mul (tile_matmul e q_tile k_tile) (rsqrt 8))))")]:
        assert old in text
        text = text.replace(old, new)
    return text


def assert_close(trials, tol=TOL):
    for t in trials:
        for name, err in t.errors.items():
            assert err <= tol, f"{name}: relative error {err:.3g} with blocks {t.blocks}"


@pytest.mark.parametrize(
    "blocks",
    [{"s.0": 1, "t.0": 1}, {"s.0": 3, "t.0": 5}, {"s.0": 5, "t.0": 3}, {"s.0": 4, "t.0": 4},
     {"s.0": 13, "t.0": 2}, {"s.0": 2, "t.0": 13}, {"s.0": 16, "t.0": 16}, {"s.0": 7, "t.0": 6}],
)
@pytest.mark.parametrize("kind", ["causal", "window", "negated"])
def test_masked_attention_ragged_blocks(kind, blocks):
    text = {"causal": causal_text, "window": window_text, "negated": negated_text}[kind]()
    assert_close(check.check_program(text, seed=8, trials=1, blocks=blocks))


@pytest.mark.parametrize("kind,s,t", [("causal", 17, 11), ("causal", 11, 17), ("window", 11, 17)])
def test_masked_attention_random_blocks_other_extents(kind, s, t):
    # Every query row keeps a key (a row with none would be 0/0 in any form).
    text = causal_text() if kind == "causal" else window_text(3)
    text = text.replace("(dims (h 2) (s 13) (t 13)", f"(dims (h 2) (s {s}) (t {t})")
    assert_close(check.check_program(text, seed=21, trials=4))


def _bounds(source):
    lo = re.search(r"^\s*lo_t0 = (.*)$", source, re.M)
    hi = re.search(r"^\s*hi_t0 = (.*)$", source, re.M)
    assert hi, source
    return (lo.group(1) if lo else "0"), hi.group(1)


class _tl:  # the scalar subset of triton.language the bounds use
    minimum = staticmethod(min)
    maximum = staticmethod(max)
    cdiv = staticmethod(lambda a, b: -(-a // b))


def _visited(expr_lo, expr_hi, pid, S, T, BS, BT):
    env = {"tl": _tl, "pid_s0": pid, "S": S, "T": T, "BLOCK_S0": BS, "BLOCK_T0": BT}
    return set(range(eval(expr_lo, env), eval(expr_hi, env)))


@pytest.mark.parametrize("kind,width", [("causal", None), ("window", 4), ("window", 1)])
def test_loop_visits_exactly_the_blocks_with_a_visible_key(kind, width):
    text = causal_text() if kind == "causal" else window_text(width)
    lo, hi = _bounds(check.emit(text))
    visible = (lambda s, t: t <= s) if kind == "causal" else (lambda s, t: t <= s and s - t < width)
    for S, T in [(13, 13), (17, 11), (5, 9)]:
        for BS in (1, 2, 3, 4, 8):
            for BT in (1, 2, 3, 5, 16):
                for pid in range(math.ceil(S / BS)):
                    rows = range(pid * BS, min((pid + 1) * BS, S))
                    need = {t // BT for s in rows for t in range(T) if visible(s, t)}
                    got = _visited(lo, hi, pid, S, T, BS, BT)
                    # Exact where the condition's own ends decide; a block that
                    # cannot hold a visible key may only be kept for the window's
                    # start in a ragged tail (never for causal).
                    assert need <= got, (S, T, BS, BT, pid, need, got)
                    assert got == need or (kind == "window" and not need and len(got) <= 1), \
                        (S, T, BS, BT, pid, need, got)


def _split(source):
    """The bounds of the loop pass without the mask: (full_lo, full_hi)
    expressions over lo_t0 and hi_t0 ("lo_t0" and "hi_t0" where absent)."""
    lo = re.search(r"^\s*full_lo_t0 = (.*)$", source, re.M)
    hi = re.search(r"^\s*full_hi_t0 = (.*)$", source, re.M)
    assert hi or lo, source
    return (lo.group(1) if lo else "lo_t0"), (hi.group(1) if hi else "hi_t0")


@pytest.mark.parametrize("kind,width", [("causal", None), ("window", 4), ("window", 1), ("window", 9)])
def test_unmasked_pass_holds_exactly_the_blocks_visible_everywhere(kind, width):
    # The loop is emitted in passes; the one without the mask must visit only
    # blocks whose every (row, key) pair of the program is visible, and all of
    # them (within the visited blocks), with the masked passes around it.
    text = causal_text() if kind == "causal" else window_text(width)
    source = check.emit(text)
    lo, hi = _bounds(source)
    full_lo, full_hi = _split(source)
    assert "for t0 in range(" + ("lo_t0" if lo != "0" else "0") + ", " in source
    visible = (lambda s, t: t <= s) if kind == "causal" else (lambda s, t: t <= s and s - t < width)
    for S, T in [(13, 13), (17, 11), (5, 9)]:
        for BS in (1, 2, 3, 4, 8):
            for BT in (1, 2, 3, 5, 16):
                for pid in range(math.ceil(S / BS)):
                    env = {"tl": _tl, "pid_s0": pid, "S": S, "T": T, "BLOCK_S0": BS, "BLOCK_T0": BT}
                    env["lo_t0"], env["hi_t0"] = eval(lo, env), eval(hi, env)
                    env["full_lo_t0"] = eval(full_lo, env)
                    a, b = env["full_lo_t0"], eval(full_hi, env)
                    # (lo_t0 > hi_t0 where no block is visited at all.)
                    assert set(range(a, b)) <= set(range(env["lo_t0"], env["hi_t0"])), (S, T, BS, BT, pid, a, b)
                    rows = range(pid * BS, min((pid + 1) * BS, S))
                    everywhere = {j for j in range(env["lo_t0"], env["hi_t0"])
                                  if all(visible(s, t) for s in rows for t in range(j * BT, min((j + 1) * BT, T)))}
                    got = set(range(a, b))
                    assert got <= everywhere, (S, T, BS, BT, pid, got, everywhere)
                    # All of them but a ragged last key block (its padding
                    # is not counted as visible by the bound).
                    missed = everywhere - got
                    assert not missed or missed == {math.ceil(T / BT) - 1}, (S, T, BS, BT, pid, got, everywhere)


def test_unmasked_flash_keeps_the_full_loop():
    source = check.emit((ROOT / "examples" / "attention" / "flash.eqf").read_text())
    assert "for t0 in range(0, tl.cdiv(T, BLOCK_T0)):" in source
    assert "hi_t0" not in source


def test_fp16_causal_within_half_tolerance():
    text = causal_text().replace(" f32 ", " f16 ")
    assert_close(check.check_program(text, seed=2, trials=2), check.TOLERANCE_HALF)


# Sliding-window decode attention as extraction finds it (flash-decoding,
# the merge split on the value dim f by storage's partition-proj-merge): the
# key blocks' kernel skips the blocks the window rules out (they store an
# empty state: max -inf), and the merge reads the buffer's components one by
# one, replicated over f.0 except the weighted values.
SPLIT_MERGE = """
(program window_split_merge
  (dims (h 2) (t 40) (e 8) (f 12) (h1 3))
  (input q f32 [h h1 e])
  (input k_cache f32 [h t e])
  (input v_cache f32 [h t f])
  (let t0 (where (replicate h1.0 (lt (partition t.0 t (replicate h.0 (iota t))) 24)) -inf
    (div (tile_matmul e (partition h.0 h (replicate t.0 (partition h1.0 h1 q)))
                        (partition h.0 h (partition t.0 t (replicate h1.0 k_cache)))) 2.8284271247461903)))
  (let t1 (max t t0))
  (let t2 (exp (sub t0 t1)))
  (let t3 (collect t.0 (tuple t1 (sum t t2) (tile_matmul t t2 (partition h.0 h (partition t.0 t (replicate h1.0 v_cache)))))))
  (let t4 (reduce c_t.0 (max (exp-sum 0) (exp-sum 0))
    (tuple (replicate f.0 (proj 0 t3)) (replicate f.0 (proj 1 t3)) (partition f.0 f (proj 2 t3)))))
  (output o [h h1 f] (combine f.0 f (combine h1.0 h1 (combine h.0 h (mul (proj 2 t4) (div 1 (proj 1 t4))))))))
"""


def test_split_merge_skips_the_blocks_the_window_rules_out():
    source = check.emit(SPLIT_MERGE)
    assert "live = " in source  # the key blocks' kernel knows its dead programs
    # Blocks of 8 keys: the first three lie wholly before the window (key 24);
    # blocks of 7 and 5 leave a block that straddles its edge; f.0 ragged.
    for blocks in ({"t.0": 8, "f.0": 5, "h1.0": 3}, {"t.0": 7, "f.0": 4, "h1.0": 2},
                   {"t.0": 5, "f.0": 12, "h1.0": 1}):
        assert_close(check.check_program(SPLIT_MERGE, seed=5, trials=1, blocks=blocks))
