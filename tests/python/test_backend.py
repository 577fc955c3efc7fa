"""torch.compile(model, backend="eqiforge") on the CPU (Triton's interpreter).

Extraction is replaced by a stand-in that offers the captured graph itself
behind a wrong variant (see test_api_optimize.py); everything else is real.
"""

import re

import pytest
import torch

import eqiforge.backend as backend
from eqiforge.options import OptionError
from eqiforge.runtime import search
from eqiforge.runtime.search import Candidate, SearchResult

pytestmark = [
    pytest.mark.skipif(not search.has_emission(),
                       reason="Triton code generation (eqiforge-opt emit) is not in this build"),
    pytest.mark.filterwarnings("ignore::eqiforge.api.InterpreterWarning"),
]


class StandIn:
    def __init__(self):
        self.programs = []

    def __call__(self, ir_text, options, target, file="<program>"):
        self.programs.append(ir_text)
        # A variant that is wrong: every output doubled.
        wrong = re.sub(r"\(output (\S+) (\[[^\]]*\]) ([^\n]*?)\)(\)?)$",
                       lambda m: f"(output {m[1]} {m[2]} (mul {m[3]} 2)){m[4]}", ir_text, flags=re.M)
        return SearchResult([Candidate(1, wrong, 1e-6, {}), Candidate(2, ir_text, 2e-6, {})], {})


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    s = StandIn()
    monkeypatch.setattr(search, "find_candidates", s)
    monkeypatch.setenv("EQIFORGE_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    yield s
    torch._dynamo.reset()


def test_backend_is_registered_by_name():
    from torch._dynamo.backends.registry import lookup_backend

    assert lookup_backend("eqiforge") is backend.eqiforge_backend


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 6)

    def forward(self, x):
        return torch.sigmoid(self.lin(x)) * x[:, :6]


@pytest.mark.filterwarnings("error::eqiforge.backend.FallbackWarning")
def test_compiled_model_matches_eager(stand_in):
    torch.manual_seed(0)
    model = Block().eval()
    compiled = torch.compile(model, backend="eqiforge")
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(4, 8)
            torch.testing.assert_close(compiled(x), model(x))
    assert len(stand_in.programs) == 1, "compiled more than once for one shape"


def test_graph_breaks_and_unsupported_ops_fall_back_to_pytorch(stand_in):
    def f(x, w):
        y = torch.relu(x @ w)
        print("graph break")  # Dynamo splits the function here
        return torch.cumsum(y, dim=0) + torch.exp(y)

    compiled = torch.compile(f, backend="eqiforge")
    x, w = torch.randn(5, 7), torch.randn(7, 3)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x, w), f(x, w))
    # The graph before the break and the translatable region after it.
    assert len(stand_in.programs) >= 2


def test_options_reach_the_backend_and_bad_ones_are_refused(stand_in):
    with pytest.raises(OptionError, match="did you mean 'budget_s'"):
        backend.make_backend(budget=3)
    compiled = torch.compile(lambda x: torch.exp(x) + 1, backend="eqiforge", options={"bugdet_s": 3})
    with pytest.raises(Exception) as info:
        compiled(torch.randn(3))
    assert "unknown option 'bugdet_s'" in str(info.value)


def test_make_backend_binds_options(stand_in, tmp_path):
    compiled = torch.compile(lambda x: torch.exp(x) + 1, backend=backend.make_backend(cache=False, top_k=2))
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x), torch.exp(x) + 1)
    assert not list(tmp_path.glob("*/*.json")), "cache=False still wrote the cache"


def test_graphs_that_need_gradients_run_in_pytorch(stand_in):
    w = torch.randn(4, 3, requires_grad=True)
    compiled = torch.compile(lambda x: torch.relu(x @ w).sum(), backend="eqiforge")
    x = torch.randn(2, 4)
    with pytest.warns(backend.FallbackWarning, match="gradients"):
        y = compiled(x)
    y.backward()
    assert w.grad is not None and stand_in.programs == []
