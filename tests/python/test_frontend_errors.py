"""What the front end says about programs it cannot translate, and the
`eqiforge-opt check` of the text it emits."""

import inspect
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
import torch

import eqiforge
from eqiforge.frontend import FrontendError, UnsupportedOpError, to_ir
from test_frontend import randn
from test_frontend_workloads import WORKLOADS

HERE = os.path.basename(__file__)


def line_of(fn, text):
    """file:line of the line of fn's source that contains text."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return f"{HERE}:{start + i}"
    raise AssertionError(f"{text!r} not in the source of {fn.__name__}")


def running_sum(x):
    y = x * 2
    z = torch.cumsum(y, 0)
    return z + 1


def first_columns(x):
    return x[:, :2] * 2


def calls_helper(x):
    return first_columns(x) + 1


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.proj(x)
        return h.sort(dim=-1).values


def test_unsupported_op_names_the_op_and_the_source_line():
    with pytest.raises(UnsupportedOpError) as info:
        to_ir(running_sum, randn(4, 4))
    e = info.value
    where = line_of(running_sum, "torch.cumsum")
    assert str(e) == f"aten.cumsum is not supported ({where}: z = torch.cumsum(y, 0))"
    assert e.op == "aten.cumsum" and e.location == where
    # One error type for every bad program, text or PyTorch.
    assert isinstance(e, FrontendError) and isinstance(e, eqiforge.IRError) and isinstance(e, ValueError)


def test_the_source_line_is_the_innermost_user_frame():
    with pytest.raises(UnsupportedOpError) as info:
        to_ir(calls_helper, randn(4, 100))  # part of a long dim: short ones are selected
    assert info.value.op == "aten.slice"
    assert "the IR has no slicing" in str(info.value) and "extent 100" in str(info.value)
    assert info.value.location == line_of(first_columns, "x[:, :2]")


def test_the_source_line_in_a_module_is_the_users_not_torchs():
    with pytest.raises(UnsupportedOpError) as info:
        to_ir(Block(), randn(3, 4))
    assert info.value.op == "aten.sort"
    assert info.value.location == line_of(Block.forward, "h.sort")
    assert info.value.source == "return h.sort(dim=-1).values"


def test_unsupported_arguments_of_a_supported_op():
    with pytest.raises(UnsupportedOpError, match=r"aten\.div with rounding_mode='floor' is not supported"):
        to_ir(lambda x: torch.div(x, 2, rounding_mode="floor"), randn(3, 4))
    with pytest.raises(UnsupportedOpError, match=r"aten\.scaled_dot_product_attention with dropout_p"):
        q = randn(1, 2, 3, 4)
        to_ir(lambda q: torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.5), q)


def argmax_of_rows(x):
    best = x.max(dim=-1)
    return x.sum(-1) - best.values, best.indices


def test_results_the_ir_cannot_make_fail_only_where_used():
    with pytest.raises(UnsupportedOpError) as info:
        to_ir(argmax_of_rows, randn(3, 4))
    assert str(info.value).startswith("aten.max's indices are not supported")
    assert info.value.location == line_of(argmax_of_rows, "x.max(dim=-1)")


def test_non_tensor_outputs_and_arguments_are_refused():
    with pytest.raises(FrontendError, match="out1 is not a tensor"):
        to_ir(lambda x: (x + 1, 3), randn(2, 2))
    with pytest.raises(FrontendError, match="argument 0 is a list"):
        to_ir(lambda xs: xs[0], [randn(2, 2)])


def test_numbers_are_specialized_and_checked_when_binding():
    r = to_ir(lambda x, c: x * c, randn(2, 2), 3.0)
    r.input_tensors(randn(2, 2), 3.0)
    with pytest.raises(FrontendError, match="captured with 3.0"):
        r.input_tensors(randn(2, 2), 4.0)
    with pytest.raises(FrontendError, match=r"captured with \(2, 2\)"):
        r.input_tensors(randn(3, 2), 3.0)


# ---- the CLI's check of the emitted text ------------------------------------------------------------


def find_cli() -> str:
    here = Path(sysconfig.get_path("scripts")) / "eqiforge-opt"
    if here.exists():
        return str(here)
    found = shutil.which("eqiforge-opt")
    if found is None:
        pytest.fail("eqiforge-opt is not installed (pip install . installs it)")
    return found


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_emitted_text_passes_eqiforge_opt_check(name, tmp_path):
    fn, shapes = WORKLOADS[name]
    r = to_ir(fn, *[randn(*s) for s in shapes], name=name)
    path = tmp_path / f"{name}.eqf"
    path.write_text(r.text)
    run = subprocess.run([find_cli(), "check", str(path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    # One line per output: "name: type".
    assert [line.split(":")[0] for line in run.stdout.splitlines()] == r.output_names
