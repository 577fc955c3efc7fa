"""bench/stack_search.py: a stack of identical layers, partitioned and
searched once per distinct subgraph (small configs, short limits)."""

import json

import pytest
import torch

from bench import stack_search
from bench.workloads import Case, WORKLOADS
from eqiforge.runtime import partition, search

pytestmark = pytest.mark.skipif(not (search.has_extraction() and partition.has_partitioning()),
                                reason="this build of eqiforge-opt has no extraction or partitioning")


def test_stack_applies_each_layer_with_its_own_weights():
    case = Case(stack_search.DECODER, stack_search.DECODER.small)
    fn, inputs = stack_search.stack_case(case, 3)
    per_layer = len(case.specs()) - 1
    assert len(inputs) == 1 + 3 * per_layer
    x = inputs[0].float()
    for i in range(3):
        x = stack_search.decoder_layer(x, *(t.float() for t in inputs[1 + i * per_layer:1 + (i + 1) * per_layer]))
    got = fn(*(t.float() for t in inputs))
    assert torch.allclose(got, x, rtol=1e-5, atol=1e-5)
    # Layers draw weights of their own.
    assert not torch.equal(inputs[1 + 1], inputs[1 + per_layer + 1])


def test_a_layer_whose_output_is_not_its_stream_is_refused():
    case = Case(WORKLOADS["qk_norm_projections"], WORKLOADS["qk_norm_projections"].small)
    with pytest.raises(SystemExit, match="cannot be stacked"):
        stack_search.stack_case(case, 2)


def test_two_layers_search_the_distinct_subgraphs_of_one(tmp_path, capsys):
    out = tmp_path / "stack.json"
    rc = stack_search.main(["--layers", "1,2", "--config", "small", "--search-time-s", "3", "--extract-time-s", "10",
                            "--top-k", "2", "--out", str(out)])
    assert rc == 0
    rows = json.loads(out.read_text())["rows"]
    one, two = rows
    assert two["ops"] == 2 * one["ops"]
    assert two["subgraphs"] == 2 * one["subgraphs"]
    assert two["distinct"] == one["distinct"] == len(one["searches"]) == len(two["searches"])
    assert all(s["candidates"] > 0 for s in one["searches"] + two["searches"])
    assert "L=2:" in capsys.readouterr().out
