"""The `eqiforge` command: optimize, demo, report, and its exit codes.

Extraction is replaced by a stand-in offering the captured program itself
(see test_api_optimize.py); the rest runs for real on the CPU.
"""

import json
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest

from eqiforge import cli
from eqiforge.runtime import search
from eqiforge.runtime.search import Candidate, MissingPieceError, SearchResult

needs_emitter = pytest.mark.skipif(not search.has_emission(),
                                   reason="Triton code generation (eqiforge-opt emit) is not in this build")
pytestmark = pytest.mark.filterwarnings("ignore::eqiforge.api.InterpreterWarning")


@pytest.fixture
def stand_in(monkeypatch):
    def find(ir_text, options, target, file="<program>"):
        return SearchResult([Candidate(1, ir_text, 1e-6, {})], {"states_expanded": 1, "distinct": 1})

    monkeypatch.setattr(search, "find_candidates", find)


@pytest.fixture
def target_file(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent("""
        import torch

        def gate(x, w):
            return torch.sigmoid(x @ w) * 2

        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(8, 4)

            def forward(self, x):
                return torch.relu(self.lin(x))

        not_callable = 3
    """))
    return path


def test_parse_inputs():
    assert cli.parse_inputs("f16[16,4096],f16[4096,4096]") == [("float16", (16, 4096)), ("float16", (4096, 4096))]
    assert cli.parse_inputs(" bf16[2, 3] , f32[5], 0.5, 3") == [("bfloat16", (2, 3)), ("float32", (5,)), 0.5, 3]
    assert cli.parse_inputs("f32[]") == [("float32", ())]


@pytest.mark.parametrize(
    "spec, words",
    [
        ("f17[3]", ["unknown dtype 'f17'"]),
        ("f32[3,x]", ["dims must be positive integers"]),
        ("f32[0]", ["dims must be positive integers"]),
        ("f32(3)", ["cannot read 'f32(3)'", "DTYPE[D0,D1,...]"]),
        ("", ["--inputs is empty"]),
    ],
)
def test_parse_inputs_errors(spec, words):
    with pytest.raises(cli.UsageError) as info:
        cli.parse_inputs(spec)
    for w in words:
        assert w in str(info.value)


@needs_emitter
def test_optimize_writes_module_picture_and_report(stand_in, target_file, tmp_path, capsys):
    out, svg = tmp_path / "kernels.py", tmp_path / "kernels.svg"
    rc = cli.main(["optimize", f"{target_file}:gate", "--inputs", "f32[5,8],f32[8,3]", "--device", "cpu",
                   "--cache-dir", str(tmp_path / "cache"), "-o", str(out), "--svg", str(svg)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "eqiforge report: program gate" in captured.out and f"wrote {out}" in captured.out
    assert "[eqiforge" in captured.err  # progress is on in the CLI
    assert "def forward(" in out.read_text() and "TUNED = dict(" in out.read_text()
    ET.fromstring(svg.read_text())
    # The report comes back from the cache.
    assert cli.main(["report", "--cache-dir", str(tmp_path / "cache")]) == 0
    assert "eqiforge report: program gate" in capsys.readouterr().out
    assert cli.main(["report", "--cache-dir", str(tmp_path / "cache"), "--json"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed)["program"] == "gate"
    assert cli.main(["report", "--cache-dir", str(tmp_path / "cache"), "--list"]) == 0
    assert "gate on Triton interpreter (CPU), 1 kernel(s)" in capsys.readouterr().out


@needs_emitter
def test_optimize_a_module_class(stand_in, target_file, tmp_path, capsys):
    rc = cli.main(["optimize", f"{target_file}:Block", "--inputs", "f32[3,8]", "--device", "cpu", "--no-cache",
                   "-q"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "program Block" in captured.out and "[eqiforge" not in captured.err


@pytest.mark.parametrize(
    "target, words",
    [
        ("missing.py:gate", ["missing.py: no such file"]),
        ("{file}:nope", ["defines no 'nope'", "Block, gate"]),
        ("{file}:not_callable", ["is a int, not a function or module"]),
        ("{file}", ["expected FILE.py:NAME"]),
    ],
)
def test_optimize_usage_errors_exit_2(target_file, capsys, target, words):
    rc = cli.main(["optimize", target.format(file=target_file), "--inputs", "f32[5,8],f32[8,3]", "--device", "cpu"])
    err = capsys.readouterr().err
    assert rc == 2
    for w in words:
        assert w in err


def test_bad_option_exits_2(target_file, capsys):
    rc = cli.main(["optimize", f"{target_file}:gate", "--inputs", "f32[5,8],f32[8,3]", "--budget", "-1"])
    assert rc == 2 and "budget_s=-1.0" in capsys.readouterr().err


def test_missing_piece_exits_3(monkeypatch, target_file, capsys):
    def missing(*args, **kwargs):
        raise MissingPieceError("extraction", "no extract verb")

    monkeypatch.setattr(search, "find_candidates", missing)
    rc = cli.main(["optimize", f"{target_file}:gate", "--inputs", "f32[5,8],f32[8,3]", "--device", "cpu",
                   "--no-cache", "-q"])
    assert rc == 3 and "extraction is not available in this build" in capsys.readouterr().err


def test_report_without_entries_or_with_a_corrupt_one_exits_2(tmp_path, capsys):
    assert cli.main(["report", "--cache-dir", str(tmp_path)]) == 2
    assert "no cached programs" in capsys.readouterr().err
    bad = tmp_path / "ab" / "bad.json"
    bad.parent.mkdir()
    bad.write_text("{not json")
    assert cli.main(["report", str(bad)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


@needs_emitter
def test_demo_runs_verifies_and_writes(stand_in, tmp_path, capsys):
    # The stand-in search returns the naive program, emitted on whole tiles:
    # a short sequence keeps them within Triton's tile limit.
    rc = cli.main(["demo", "-o", str(tmp_path), "-q", "--seq", "32"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "sequence 32" in out and "naive attention" in out and "checked again on fresh inputs" in out
    assert (tmp_path / "attention_kernels.py").exists() and (tmp_path / "attention_kernels.svg").exists()


def test_no_verb_is_a_usage_error(capsys):
    assert cli.main([]) == 2


def test_runs_as_a_module():
    r = subprocess.run([sys.executable, "-m", "eqiforge.cli", "--help"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0
    for verb in ("optimize", "demo", "report"):
        assert verb in r.stdout


def test_demo_rejects_a_bad_sequence_length(capsys):
    assert cli.main(["demo", "--seq", "0"]) == 2
    assert "--seq must be positive" in capsys.readouterr().err

