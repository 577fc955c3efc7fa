"""Options of eqiforge.optimize: every mistake gets a message that names the
option and what it accepts, before any work is done."""

import pytest
import torch

from eqiforge.api import optimize
from eqiforge.options import NAMES, OptionError, Options, make_options


def test_defaults():
    o = make_options()
    assert o == Options()
    assert o.unsupported == "error" and o.verbose == 0 and o.cache is True


def test_values_are_normalized():
    o = make_options(verbose=True, target="H200", block_sizes=[64, 16, 16], num_warps=4, budget_s=5)
    assert o.verbose == 1 and o.target == "h200"
    assert o.block_sizes == (16, 64) and o.num_warps == (4,) and o.budget_s == 5.0


@pytest.mark.parametrize(
    "given, words",
    [
        ({"budget": 5}, ["unknown option 'budget'", "did you mean 'budget_s'"]),
        ({"verbosity": 1}, ["unknown option 'verbosity'", "did you mean 'verbose'"]),
        ({"frobnicate": 1}, ["unknown option 'frobnicate'", "the options are: budget_s"]),
        ({"budget_s": -1}, ["budget_s=-1", "positive, finite number of seconds"]),
        ({"budget_s": float("nan")}, ["budget_s=nan", "positive, finite"]),
        ({"budget_s": float("inf")}, ["budget_s=inf"]),
        ({"budget_s": "10"}, ["budget_s='10'"]),
        ({"budget_s": True}, ["budget_s=True"]),
        ({"target": "h300"}, ["target='h300'", "'h200', 'h100', 'a100', 'rtx5090' or None"]),
        ({"unsupported": "ignore"}, ["unsupported='ignore'", "'error', 'fallback'"]),
        ({"verbose": 3}, ["verbose=3", "True, False, 0, 1 or 2"]),
        ({"block_sizes": [16, 24]}, ["block_sizes=[16, 24]", "powers of two"]),
        ({"block_sizes": []}, ["non-empty list"]),
        ({"num_warps": [64]}, ["num_warps=[64]", "from 1 to 32"]),
        ({"num_stages": 0}, ["num_stages=0", "from 1 to 8"]),
        ({"top_k": 0}, ["top_k=0", "positive integer (candidates to tune)"]),
        ({"node_limit": 1.5}, ["node_limit=1.5", "positive integer"]),
        ({"extract_mode": "late"}, ["extract_mode='late'", "'early', 'after', 'none'"]),
        ({"cache": "yes"}, ["cache='yes'", "True or False"]),
        ({"cache_dir": 3}, ["cache_dir=3", "a path"]),
        ({"seed": -1}, ["seed=-1", "non-negative integer"]),
        ({"cut_compare_ops": -1}, ["cut_compare_ops=-1", "non-negative integer"]),
        ({"fuse_cuts": 1}, ["fuse_cuts=1", "True or False"]),
    ],
)
def test_bad_options_are_named_with_what_is_accepted(given, words):
    with pytest.raises(OptionError) as info:
        make_options(**given)
    for w in words:
        assert w in str(info.value)


def test_option_error_is_a_value_error():
    assert issubclass(OptionError, ValueError)


def test_every_option_is_checked():
    # Each field has a check: a value of an absurd type is refused for all.
    for name in NAMES:
        with pytest.raises(OptionError, match=name):
            make_options(**{name: object()})


def test_optimize_checks_options_before_any_work():
    def never_called(x):
        raise AssertionError("optimize ran the program before checking its options")

    with pytest.raises(OptionError, match="did you mean 'budget_s'"):
        optimize(never_called, torch.ones(3), budget=3)
    with pytest.raises(OptionError, match="unsupported='skip'"):
        optimize(never_called, torch.ones(3), unsupported="skip")


def test_optimize_needs_something_callable():
    with pytest.raises(TypeError, match="function or a torch.nn.Module, got int"):
        optimize(3, torch.ones(3))


def test_updated_checks_too():
    o = make_options(budget_s=3)
    assert o.updated(unsupported="fallback").unsupported == "fallback"
    assert o.updated(unsupported="fallback").budget_s == 3.0
    with pytest.raises(OptionError):
        o.updated(budget_s=0)


def test_cache_dir_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("EQIFORGE_CACHE_DIR", str(tmp_path / "env"))
    assert make_options().resolved_cache_dir() == tmp_path / "env"
    assert make_options(cache_dir=tmp_path / "given").resolved_cache_dir() == tmp_path / "given"
    monkeypatch.delenv("EQIFORGE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert make_options().resolved_cache_dir() == tmp_path / "xdg" / "eqiforge"


def test_key_fields_leave_out_what_does_not_change_the_choice():
    a = make_options(verbose=2, cache_dir="/x", budget_s=3).key_fields()
    b = make_options().key_fields()
    assert a == b
    assert make_options(top_k=2).key_fields() != b
