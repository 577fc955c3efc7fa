"""Parts of short dims (x[:, 1:3], x[..., 0], p[:, :, 0:1]): the IR has no
slicing, so the front end selects them with a masked sum over the dim. Each
case is compared with eager on random inputs; a long dim stays an error."""

import pytest
import torch

from eqiforge.frontend import UnsupportedOpError, to_ir

from test_frontend import check_against_eager, randn


@pytest.mark.parametrize("fn", [
    lambda x: x[:, 1:3] * 2,
    lambda x: x[:, 0:1] - 0.5 * x[:, 3:4],
    lambda x: x[:, -2:] + 1,
    lambda x: x[1:, :].sum(-1),
    lambda x: x[:, 2] * x[:, 0],
    lambda x: x[..., -1].exp(),
    lambda x: torch.softmax(x[:, 1:4], dim=-1),
], ids=["middle", "two-units", "negative-start", "rows", "select", "select-last", "softmax-of-part"])
def test_a_part_of_a_short_dim_matches_eager(fn):
    check_against_eager(fn, randn(3, 5))


def test_differential_attentions_two_maps():
    # The benchmark's differential attention: two softmax maps in one dim of 2.
    def diff(p, lam):
        return (p[:, :, 0:1] - lam.view(1, 3, 1, 1, 1) * p[:, :, 1:2]).squeeze(2)
    p = torch.softmax(randn(2, 3, 2, 1, 7), dim=-1)
    check_against_eager(diff, p, randn(3, positive=True))


def test_a_part_of_a_broadcast_dim():
    # x's dim 1 is stretched from 1: every part of it is the same.
    check_against_eager(lambda x: x.expand(3, 6)[:, 2:5] + x, randn(3, 1))


def test_a_part_of_a_long_dim_is_an_error():
    with pytest.raises(UnsupportedOpError, match=r"aten\.slice of part of a dim of extent 100"):
        to_ir(lambda x: x[:, :10], randn(2, 100))
    with pytest.raises(UnsupportedOpError, match=r"aten\.slice with step 2"):
        to_ir(lambda x: x[:, ::2], randn(2, 4))
