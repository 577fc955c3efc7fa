"""bench/narrow_tiles.py's GEMV, run with Triton's interpreter against a
float64 product: the kernel whose timings would fit the cost model's DRAM
efficiency of narrow tiles computes x @ W for every tile shape it sweeps
(several K blocks, and one block of the whole K)."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from bench import narrow_tiles  # noqa: E402


@pytest.mark.parametrize("bn,bk", [(8, 16), (16, 64), (32, 128), (8, 128)])
def test_the_swept_gemv_computes_x_times_w(bn, bk):
    K, N = 128, 64
    gen = torch.Generator().manual_seed(bn * 1000 + bk)
    w = torch.randn(K, N, generator=gen).to(torch.float16)
    x = torch.randn(K, generator=gen).to(torch.float16)
    out = torch.empty(N, dtype=torch.float16)
    narrow_tiles.gemv_sum[(N // bn,)](x, w, out, K, N, BK=bk, BN=bn)
    want = x.double() @ w.double()
    err = float((out.double() - want).norm() / want.norm())
    assert err < 2e-3, err


@pytest.mark.parametrize("bn,bk,s", [(16, 16, 2), (32, 32, 4)])
def test_the_split_k_gemv_computes_x_times_w(bn, bk, s):
    K, N = 128, 64
    gen = torch.Generator().manual_seed(bn * 1000 + bk + s)
    w = torch.randn(K, N, generator=gen).to(torch.float16)
    x = torch.randn(K, generator=gen).to(torch.float16)
    part = torch.empty(s, N, dtype=torch.float32)
    out = torch.empty(N, dtype=torch.float16)
    narrow_tiles.gemv_split_partials[(N // bn, s)](x, w, part, K, N, BK=bk, BN=bn, KS=K // s)
    narrow_tiles.gemv_split_merge[(N // 32,)](part, out, N, S=s, BN=32)
    want = x.double() @ w.double()
    err = float((out.double() - want).norm() / want.norm())
    assert err < 2e-3, err
