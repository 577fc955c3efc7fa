"""eqiforge.optimize end to end on the CPU (Triton's interpreter), with the
front end, the emitter, verification, the launch path, the cache and the
report all real.

Extraction is replaced here by a stand-in that offers the captured program
itself (it emits as one kernel) behind two deliberately wrong variants, so
these tests also check that wrong candidates never win. The same flows with
the real search are in test_api_search.py.
"""

import re
import warnings
import xml.etree.ElementTree as ET

import pytest
import torch

import eqiforge.api as api
from eqiforge import IRError
from eqiforge.options import OptionError
from eqiforge.runtime import search
from eqiforge.runtime.cache import CacheWarning
from eqiforge.runtime.launch import BindingError
from eqiforge.runtime.search import Candidate, SearchResult
from eqiforge.runtime.tuner import NoValidCandidate

pytestmark = [
    pytest.mark.skipif(not search.has_emission(),
                       reason="Triton code generation (eqiforge-opt emit) is not in this build"),
    pytest.mark.filterwarnings("ignore::eqiforge.api.InterpreterWarning"),
    pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning"),
]


def wrap_outputs(text: str, template: str) -> str:
    """Every `(output NAME [dims] EXPR)` with EXPR replaced by template(EXPR)."""
    out, pos = [], 0
    for m in re.finditer(r"\(output \S+ \[[^\]]*\] ", text):
        if m.start() < pos:
            continue
        start = m.end()
        depth, i = 0, start
        while True:
            ch = text[i]
            if ch == "(":
                depth += 1
            elif ch == ")":
                if depth == 0:
                    break
                depth -= 1
            elif ch in " \n" and depth == 0:
                break
            i += 1
        out.append(text[pos:start] + template.format(text[start:i]))
        pos = i
    out.append(text[pos:])
    return "".join(out)


class StandIn:
    """Extraction's stand-in: [wrong by a factor, NaN, the program itself]."""

    def __init__(self, variants=("wrong", "nan", "same")):
        self.variants = variants
        self.calls = 0

    def __call__(self, ir_text, options, target, file="<program>"):
        self.calls += 1
        forms = {
            "wrong": wrap_outputs(ir_text, "(mul {} 3)"),
            "nan": wrap_outputs(ir_text, "(sqrt (sub (mul {} 0) 1))"),
            "same": ir_text,
        }
        cands = [Candidate(r + 1, forms[v], 1e-6 * (r + 1), {}) for r, v in enumerate(self.variants)]
        return SearchResult(cands, {"states_expanded": 7, "distinct": len(cands)})


@pytest.fixture
def stand_in(monkeypatch):
    s = StandIn()
    monkeypatch.setattr(search, "find_candidates", s)
    return s


def relu_matmul(x, w):
    return torch.relu(x @ w)


def inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(5, 7, generator=g), torch.randn(7, 6, generator=g)


def test_wrap_outputs():
    text = "(program p\n  (dims (m 2))\n  (input x f32 [m])\n  (output y [m] (exp x))\n  (output z [m] x))"
    assert wrap_outputs(text, "(neg {})").endswith("(output y [m] (neg (exp x)))\n  (output z [m] (neg x)))")


def test_optimize_matches_eager_and_never_picks_a_wrong_candidate(stand_in, tmp_path):
    fast = api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path)
    for seed in (1, 2):
        x, w = inputs(seed)
        torch.testing.assert_close(fast(x, w), relu_matmul(x, w))
    r = fast.report
    assert r.candidate_rank == 3 and r.candidates == 3
    assert r.tuning["verify_failed"] == 2 and r.tuning["verified"] == 1
    assert r.error is not None and r.error <= 1e-2
    assert r.device == "Triton interpreter (CPU)" and r.timings == {}
    assert len(r.kernels) == 1 and "matmul" in r.kernels[0].ops
    assert r.kernels[0].reads == ["x", "w"] and r.kernels[0].writes == [r.outputs[0]]
    assert fast.interpret


def test_report_text_and_picture(stand_in, tmp_path):
    fast = api.optimize(relu_matmul, *inputs(), cache=False)
    text = fast.report.text()
    assert "chosen: candidate 3 of 3" in text
    assert "3 configurations tried: 1 verified" in text and "2 gave wrong values" in text
    assert "not measured (no GPU)" in text and "states expanded 7" in text
    svg = fast.report.svg()
    root = ET.fromstring(svg)  # well-formed
    assert root.tag.endswith("svg")
    labels = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert fast.report.kernels[0].name in labels and "x" in labels and "matmul" in labels


def test_second_optimize_is_a_cache_hit(stand_in, tmp_path):
    first = api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path)
    assert stand_in.calls == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        second = api.optimize(relu_matmul, *inputs(3), cache_dir=tmp_path)
    assert stand_in.calls == 1, "the second optimize searched again"
    assert second.report.from_cache and second.source == first.source
    x, w = inputs(4)
    torch.testing.assert_close(second(x, w), relu_matmul(x, w))
    # Other shapes are another program.
    api.optimize(relu_matmul, torch.randn(3, 7), torch.randn(7, 6), cache_dir=tmp_path)
    assert stand_in.calls == 2


def test_corrupt_cache_entry_is_ignored_and_replaced(stand_in, tmp_path):
    api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path)
    (entry,) = [p for p in tmp_path.glob("*/*.json")]
    entry.write_text(entry.read_text()[:100])
    with pytest.warns(CacheWarning, match="corrupt"):
        again = api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path)
    assert stand_in.calls == 2
    x, w = inputs(5)
    torch.testing.assert_close(again(x, w), relu_matmul(x, w))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path)  # the entry was rewritten whole
    assert stand_in.calls == 2


def test_cache_entry_whose_module_does_not_load_is_not_used(stand_in, tmp_path):
    from eqiforge.runtime.cache import Cache, read_entry

    api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path)
    (path,) = tmp_path.glob("*/*.json")
    entry = read_entry(path)
    Cache(tmp_path).store(entry.key, {**entry.payload, "source": "this is not python"})
    with pytest.warns(CacheWarning, match="does not load"):
        fast = api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path)
    assert stand_in.calls == 2
    torch.testing.assert_close(fast(*inputs(6)), relu_matmul(*inputs(6)))


def test_no_valid_candidate_is_an_error_not_a_wrong_result(monkeypatch, tmp_path):
    monkeypatch.setattr(search, "find_candidates", StandIn(("wrong", "nan")))
    with pytest.raises(NoValidCandidate, match="2 gave wrong values"):
        api.optimize(relu_matmul, *inputs(), cache_dir=tmp_path)
    assert not list(tmp_path.glob("*/*.json")), "a failed optimize wrote a cache entry"


def test_module_parameters_are_bound_once_and_updates_are_seen(stand_in):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(7, 6), torch.nn.ReLU()).eval()
    x = torch.randn(5, 7)
    fast = api.optimize(model, x, cache=False)
    with torch.no_grad():
        torch.testing.assert_close(fast(x), model(x))
        model[0].weight.mul_(-2)  # in place, as an optimizer step would
        torch.testing.assert_close(fast(x), model(x))


def test_outputs_keep_structure_shapes_and_dtypes(stand_in):
    def two(x):
        return torch.exp(x).sum(dim=-1, keepdim=True), (x * 2,)

    x = torch.randn(3, 1, 4)
    fast = api.optimize(two, x, cache=False)
    got, want = fast(x), two(x)
    assert isinstance(got, tuple) and isinstance(got[1], tuple)
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[1][0], want[1][0])


def test_calls_with_other_shapes_or_dtypes_are_refused(stand_in):
    fast = api.optimize(relu_matmul, *inputs(), cache=False)
    with pytest.raises(BindingError, match=r"argument 0 is \(4, 7\) torch.float32, but the program was optimized "
                                           r"for \(5, 7\) torch.float32"):
        fast(torch.randn(4, 7), torch.randn(7, 6))
    with pytest.raises(BindingError, match="expected 2 positional arguments, got 1"):
        fast(torch.randn(5, 7))
    with pytest.raises(BindingError, match="keyword arguments"):
        fast(torch.randn(5, 7), w=torch.randn(7, 6))


def test_save_writes_a_module_with_the_tuned_parameters(stand_in, tmp_path):
    fast = api.optimize(relu_matmul, *inputs(), cache=False)
    path = fast.save(tmp_path / "kernels.py")
    text = path.read_text()
    assert text.startswith(fast.source.rstrip("\n")[:200])
    assert "TUNED = dict(" in text and "def run(*inputs):" in text
    compile(text, str(path), "exec")


def test_unsupported_op_error_names_the_op_and_the_line():
    def uses_cumsum(x):
        return torch.cumsum(torch.exp(x), 0)  # the line the message quotes

    with pytest.raises(IRError) as info:
        api.optimize(uses_cumsum, torch.randn(4, 3), cache=False)
    message = str(info.value)
    assert "cumsum" in message and "test_api_optimize.py" in message and "torch.cumsum" in message


def test_unsupported_op_with_fallback_runs_that_part_in_pytorch(stand_in):
    def mixed(x, w):
        return torch.cumsum(torch.relu(x @ w), 0) * 2

    x, w = inputs()
    fast = api.optimize(mixed, x, w, cache=False, unsupported="fallback")
    torch.testing.assert_close(fast(*inputs(8)), mixed(*inputs(8)))
    parts = fast.parts
    assert any(p.program is not None for p in parts), "no region was optimized"
    text = fast.report.text()
    assert "cumsum" in text and "regions optimized" in text


def test_interpreter_warning_is_given_once(stand_in, monkeypatch):
    monkeypatch.setattr(api, "_INTERPRETER_WARNED", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        api.optimize(relu_matmul, *inputs(), cache=False)
        api.optimize(relu_matmul, *inputs(), cache=False)
    mine = [w for w in caught if issubclass(w.category, api.InterpreterWarning)]
    assert len(mine) == 1
    assert "Triton's interpreter" in str(mine[0].message) and mine[0].filename == __file__


def test_bad_option_fails_before_capture():
    with pytest.raises(OptionError):
        api.optimize(relu_matmul, *inputs(), top_k=-1)


@pytest.mark.parametrize("limit, option", [("memory", "memory_limit_mb"), ("time", "extract_time_s")])
def test_an_extraction_stopped_by_its_limit_names_the_option(monkeypatch, tmp_path, limit, option):
    # One operator: no partition to fall back on, so the search's result is final.
    stats = {"limit_hit": True, "limit": limit, "states_expanded": 7}
    monkeypatch.setattr(search, "find_candidates", lambda *a, **k: search.SearchResult([], dict(stats)))
    with pytest.raises(NoValidCandidate, match=f"extraction stopped at its {limit} limit \\(option {option}\\)"):
        api.optimize(torch.relu, torch.randn(4, 5), cache_dir=tmp_path)
