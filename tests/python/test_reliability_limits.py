"""The e-graph memory cap from Python: the option `memory_limit_mb` (checked,
part of the cache key), carried to `eqiforge-opt extract --memory-limit`, and
a search stopped by it going on to extraction and to a correct program, with
the stop in the report. The cap itself (within 10%, on every workload) is
tested in tests/cpp/test_limits.cc."""

from pathlib import Path

import pytest
import torch

import eqiforge.api as api
from eqiforge.options import OptionError, make_options
from eqiforge.runtime import search

REPO = Path(__file__).resolve().parents[2]

needs_search = [
    pytest.mark.skipif(not search.has_extraction(), reason="extraction (eqiforge-opt extract) is not in this build"),
    pytest.mark.skipif(not search.has_emission(),
                       reason="Triton code generation (eqiforge-opt emit) is not in this build"),
    pytest.mark.filterwarnings("ignore::eqiforge.api.InterpreterWarning"),
]


def test_memory_limit_option_default_and_key():
    o = make_options()
    assert o.memory_limit_mb == 4096
    assert make_options(memory_limit_mb=64).memory_limit_mb == 64
    # It can change which program is found: part of the cache key.
    assert make_options(memory_limit_mb=64).key_fields() != o.key_fields()
    assert o.key_fields()["memory_limit_mb"] == 4096


@pytest.mark.parametrize("bad", [0, -1, 1.5, "64", True, None, 1 << 21])
def test_memory_limit_option_is_checked(bad):
    with pytest.raises(OptionError, match=r"option memory_limit_mb=.*MiB from 1 to 1048576"):
        make_options(memory_limit_mb=bad)


def test_memory_limit_option_names_itself_when_misspelled():
    with pytest.raises(OptionError, match="did you mean 'memory_limit_mb'"):
        make_options(memory_limit_m=64)


@pytest.mark.skipif(not search.has_extraction(), reason="extraction (eqiforge-opt extract) is not in this build")
def test_search_stopped_by_the_cap_still_extracts():
    # Saturated, this workload's e-graph holds about 1.8 MB.
    text = (REPO / "examples/workloads/rmsnorm_swiglu.eqf").read_text()
    capped = search.find_candidates(text, make_options(memory_limit_mb=1, top_k=2), "h200")
    assert capped.stats["saturation_stop"] == "memory-limit"
    assert capped.candidates, "a search stopped by the cap must still extract from what it has"
    free = search.find_candidates(text, make_options(top_k=2), "h200")
    assert free.stats["saturation_stop"] == "saturated"


def gated_mlp(x, g, w1, w3, w2):
    h = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * g
    return (torch.nn.functional.silu(h @ w1) * (h @ w3)) @ w2


def mlp_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 16, generator=gen), torch.randn(16, generator=gen) * 0.1 + 1,
            torch.randn(16, 24, generator=gen) / 4, torch.randn(16, 24, generator=gen) / 4,
            torch.randn(24, 16, generator=gen) / 5)


@needs_search[0]
@needs_search[1]
@needs_search[2]
def test_optimize_under_a_small_cap_reports_it_and_is_correct():
    fast = api.optimize(gated_mlp, *mlp_inputs(0), cache=False, memory_limit_mb=1, top_k=2,
                        search_time_s=30, extract_time_s=30)
    assert fast.report.search["saturation_stop"] == "memory-limit"
    assert "saturation stop memory-limit" in fast.report.text()
    args = mlp_inputs(1)
    torch.testing.assert_close(fast(*args), gated_mlp(*args), rtol=1e-4, atol=1e-5)
