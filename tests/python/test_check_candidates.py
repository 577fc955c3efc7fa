"""`eqiforge-opt emit --candidate K` and `python -m eqiforge.check --top K`:
the ranked candidates of a naive program's extraction, emitted and run with
Triton's interpreter against the reference interpreter evaluating the naive
program. Extraction here unites the naive program with its hand-tiled forms
and does not saturate (--rules none), so it finishes at once."""

import os
import subprocess
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"

import pytest  # noqa: E402

pytest.importorskip("triton")
pytest.importorskip("torch")

import importlib  # noqa: E402

check = importlib.import_module("eqiforge.check")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DECODE = EXAMPLES / "attention_decode"
DECODE_ALSO = ["--also", str(DECODE / "flash_decoding.eqf"), "--also", str(DECODE / "split_channels.eqf")]


def emit(*args):
    return subprocess.run([check._emitter(), "emit", *map(str, args)], capture_output=True, text=True, timeout=120)


def test_emit_candidates_in_rank_order():
    first = emit(DECODE / "naive.eqf", "--candidate", 1, "--rules", "none", *DECODE_ALSO)
    second = emit(DECODE / "naive.eqf", "--candidate", 2, "--rules", "none", *DECODE_ALSO)
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    assert "candidate 1 of 2" in first.stdout and "candidate 2 of 2" in second.stdout
    # The two candidates are different kernel forms: channel split (one
    # kernel) and flash-decoding (a collect kernel, then the merge).
    assert first.stdout.count("@triton.jit") != second.stdout.count("@triton.jit")
    # Each is the module of the program `extract` ranks at that place, and
    # computes what the naive program computes.
    naive = (DECODE / "naive.eqf").read_text()
    ranked = check.extract(naive, 2, ["--rules", "none", *DECODE_ALSO])
    assert [c.rank for c in ranked] == [1, 2]
    for c, source in zip(ranked, (first.stdout, second.stdout)):
        # Printing a candidate names its shared nodes (t0, t1, ...), so compare
        # the kernels and their launches rather than the text.
        launches = [line.strip() for line in source.splitlines() if "_kernel[(" in line]
        assert launches == [line.strip() for line in check.emit(c.program).splitlines() if "_kernel[(" in line]
        module = check.load_module(source, f"decode_candidate{c.rank}")
        trials = check.check_program(c.program, seed=3, trials=2, module=module, reference=naive)
        assert max(t.max_error for t in trials) <= check.TOLERANCE_FP32


def test_emit_writes_the_candidate_to_a_file(tmp_path):
    out = tmp_path / "kernels.py"
    done = emit(DECODE / "naive.eqf", "--candidate", 1, "--rules", "none", *DECODE_ALSO, "-o", out)
    assert done.returncode == 0, done.stderr
    assert "def forward(q, k, v" in out.read_text()


def test_emit_candidate_past_the_last_is_an_error():
    done = emit(DECODE / "naive.eqf", "--candidate", 3, "--rules", "none", *DECODE_ALSO)
    assert done.returncode == 2
    assert "--candidate 3 asked for, but extraction found only 2 candidates" in done.stderr
    assert "naive.eqf" in done.stderr


def test_emit_extraction_options_need_candidate():
    done = emit(DECODE / "naive.eqf", "--rules", "none")
    assert done.returncode == 2
    assert "--rules is an extraction option: it needs --candidate K" in done.stderr


def test_emit_without_candidate_is_the_program_as_written():
    as_written = emit(EXAMPLES / "attention" / "flash.eqf")
    assert as_written.returncode == 0, as_written.stderr
    assert "candidate" not in as_written.stdout.splitlines()[0]
    assert "for t0 in range(0, tl.cdiv(T, BLOCK_T0)):" in as_written.stdout


@pytest.mark.parametrize(
    "example,variants",
    [
        ("attention_decode", ["flash_decoding", "split_channels"]),
        ("matmul", ["split_k", "split_k_two_levels"]),
        ("lora", ["one_kernel", "two_kernels"]),
        ("layernorm", ["one_pass_tuple", "one_pass_welford"]),
        ("attention_causal", ["flash"]),
    ],
)
def test_check_top_candidates(example, variants, capsys):
    also = [a for v in variants for a in ("--also", str(EXAMPLES / example / f"{v}.eqf"))]
    rc = check.main([str(EXAMPLES / example / "naive.eqf"), "--top", "3", "--rules", "none", *also,
                     "--trials", "2", "--seed", "4"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "candidate 1 (" in out
    if len(variants) > 1:
        assert "candidate 2 (" in out, out


def test_check_top_fails_on_a_wrong_candidate(tmp_path, capsys):
    # A "tiled" matmul that doubles its result: extraction unites it with the
    # naive program (same types), so one candidate computes the wrong value.
    wrong = (EXAMPLES / "matmul" / "split_k.eqf").read_text()
    assert "(let c_partial (tile_matmul k a_tile b_tile))" in wrong
    wrong = wrong.replace("(let c_partial (tile_matmul k a_tile b_tile))",
                          "(let c_partial (mul (tile_matmul k a_tile b_tile) 2))")
    path = tmp_path / "wrong.eqf"
    path.write_text(wrong)
    rc = check.main([str(EXAMPLES / "matmul" / "naive.eqf"), "--top", "2", "--rules", "none",
                     "--also", str(path), "--trials", "1"])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert "FAIL: candidate 1" in out


def test_check_top_small_refuses_extent_dependent_constants(capsys):
    layernorm = EXAMPLES / "layernorm"
    rc = check.main([str(layernorm / "naive.eqf"), "--top", "1", "--rules", "none", "--small",
                     "--also", str(layernorm / "one_pass_welford.eqf")])
    assert rc == 2
    assert "a constant depends on an extent" in capsys.readouterr().err


def test_check_top_small_resizes_the_also_programs(capsys):
    matmul = EXAMPLES / "matmul"
    rc = check.main([str(matmul / "naive.eqf"), "--top", "2", "--rules", "none", "--small", "--seed", "2",
                     "--also", str(matmul / "split_k.eqf"), "--trials", "1"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "(small dims)" in out


def test_check_extraction_arguments_pass_through(capsys):
    # --extract-arg reaches `eqiforge-opt extract`: an unknown option is its error.
    rc = check.main([str(DECODE / "naive.eqf"), "--top", "1", "--rules", "none", *DECODE_ALSO,
                     "--extract-arg=--no-such-option"])
    assert rc == 2
    assert "--no-such-option" in capsys.readouterr().err


def test_check_extraction_options_need_top():
    with pytest.raises(SystemExit) as e:
        check.main([str(DECODE / "naive.eqf"), "--rules", "none"])
    assert e.value.code == 2


def test_loops_bounded_by_runtime_values_run_interpreted(tmp_path):
    # Triton 3.6's interpreter needs check's compatibility patch for these
    # (NumPy 2 refuses int() of a one-element array); applying it twice is harmless.
    check._interpret()
    check._interpret()
    source = """import torch
import triton
import triton.language as tl


@triton.jit
def count_kernel(out_ptr, N, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    hi = tl.minimum(tl.cdiv(N, BLOCK), pid + 1)
    acc = tl.zeros((1,), dtype=tl.int32)
    for i in range(0, hi):
        acc += 1
    tl.store(out_ptr + pid + tl.arange(0, 1), acc)


def forward():
    out = torch.zeros(4, dtype=torch.int32)
    count_kernel[(4,)](out, 10, BLOCK=4)
    return out
"""
    module = check.load_module(source, "loop_bounds_probe")
    assert module.forward().tolist() == [1, 2, 3, 3]


NGPT = """(program ngpt_update
  (dims (k 48) (k1 40))
  (input h f32 [k]) (input x f32 [k1]) (input w f32 [k1 k]) (input alpha f32 [k])
  (let mm (matmul k1 x w))
  (let d (div mm (sqrt (sum k (mul mm mm)))))
  (let a (add h (mul alpha (sub d h))))
  (output out [k] (div a (sqrt (sum k (mul a a))))))
"""

# nGPT's reuse twin (extract/reuse.h): the second kernel loads the first
# kernel's result through `(partition k.0 k t1)` instead of computing x@W again.
NGPT_REUSE = """(program ngpt_update
  (dims (k 48) (k1 40))
  (input h f32 [k]) (input x f32 [k1]) (input w f32 [k1 k]) (input alpha f32 [k])
  (let t0 (partition k.0 k h))
  (let t1 (combine k.0 k (preduce k1.0 + (tile_matmul k1 (partition k1.0 k1 (replicate k.0 x))
                                                      (partition k1.0 k1 (partition k.0 k w))))))
  (let t2 (replicate k.0 t1))
  (let t3 (rsqrt (sum k (mul t2 t2))))
  (let t4 (replicate k.0 h))
  (let t5 (add t4 (mul (replicate k.0 alpha) (sub (mul t2 t3) t4))))
  (output out [k] (combine k.0 k (mul (add t0 (mul (partition k.0 k alpha) (sub (mul (partition k.0 k t1) t3) t0)))
                                      (rsqrt (sum k (mul t5 t5)))))))
"""


def test_a_kernel_loading_another_kernels_result_runs_correctly(tmp_path, capsys):
    naive, reuse = tmp_path / "ngpt.eqf", tmp_path / "ngpt_reuse.eqf"
    naive.write_text(NGPT)
    reuse.write_text(NGPT_REUSE)
    # Blocks smaller than the dims: three programs, each loading its block
    # of t1, and five loop iterations.
    rc = check.main([str(naive), "--top", "2", "--rules", "none", "--also", str(reuse), "--trials", "2",
                     "--blocks", "k.0=16,k1.0=8"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "candidate 1 (" in out, out
