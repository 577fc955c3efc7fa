"""Hostile PyTorch-side input to eqiforge.optimize and to the program it
returns (real search, Triton's interpreter): tensors that are not contiguous,
tensors on the wrong device, dtypes the IR has no type for or holds
differently. Each gets the right values or a clear error that names the
input; never a wrong result or an error from deep inside Triton.

Shapes and dtypes of a call that differ from the example inputs are covered
in test_api_optimize.py (test_calls_with_other_shapes_or_dtypes_are_refused).
"""

import pytest
import torch

import eqiforge.api as api
from eqiforge import cli
from eqiforge.frontend import FrontendError
from eqiforge.runtime import search
from eqiforge.runtime.launch import BindingError

pytestmark = [
    pytest.mark.skipif(not search.has_extraction(), reason="extraction (eqiforge-opt extract) is not in this build"),
    pytest.mark.skipif(not search.has_emission(),
                       reason="Triton code generation (eqiforge-opt emit) is not in this build"),
    pytest.mark.filterwarnings("ignore::eqiforge.api.InterpreterWarning"),
]

LIMITS = dict(cache=False, top_k=2, search_time_s=10, extract_time_s=20)


def relu_matmul(x, w):
    return torch.relu(x @ w)


def inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(5, 7, generator=g), torch.randn(7, 6, generator=g)


@pytest.fixture(scope="module")
def fast():
    return api.optimize(relu_matmul, *inputs(), **LIMITS)


def odd_layouts(seed):
    """(x, w) of the example shapes in layouts a contiguous tensor never has."""
    g = torch.Generator().manual_seed(seed)
    return {
        "transposed views": (torch.randn(7, 5, generator=g).t(), torch.randn(6, 7, generator=g).t()),
        "strided slices": (torch.randn(10, 21, generator=g)[::2, ::3], torch.randn(7, 12, generator=g)[:, 1::2]),
        "expanded (stride 0)": (torch.randn(1, 7, generator=g).expand(5, 7), torch.randn(7, 1, generator=g).expand(7, 6)),
        "offset into storage": (torch.randn(6, 7, generator=g)[1:], torch.randn(8, 6, generator=g)[1:]),
    }


def test_non_contiguous_arguments_give_eager_values(fast):
    for layout, (x, w) in odd_layouts(1).items():
        plain = all(t.is_contiguous() and t.storage_offset() == 0 for t in (x, w))
        assert not plain, layout
        before = (x.clone(), w.clone())
        torch.testing.assert_close(fast(x, w), relu_matmul(x, w), msg=lambda m: f"{layout}: {m}")
        assert torch.equal(x, before[0]) and torch.equal(w, before[1]), f"{layout}: an input was written"


def test_non_contiguous_example_inputs(fast):
    x, w = odd_layouts(2)["transposed views"]
    other = api.optimize(relu_matmul, x, w, **LIMITS)
    for args in (inputs(3), odd_layouts(4)["strided slices"]):
        torch.testing.assert_close(other(*args), relu_matmul(*args))


def test_meta_example_inputs_are_refused_before_any_work():
    def never_called(x, w):
        raise AssertionError("optimize ran a program on meta tensors")

    x, w = inputs()
    with pytest.raises(BindingError, match="example input 1 is on the meta device"):
        api.optimize(never_called, x, w.to("meta"), **LIMITS)
    with pytest.raises(BindingError, match="example input 0 is on the meta device"):
        api.optimize(never_called, x.to("meta"), w.to("meta"), **LIMITS)


def test_meta_arguments_of_a_call_are_refused_naming_them(fast):
    x, w = inputs(5)
    with pytest.raises(BindingError, match=r"argument 1 \(w\) is on the meta device"):
        fast(x, w.to("meta"))
    with pytest.raises(BindingError, match=r"argument 0 \(x\) is on the meta device"):
        fast(x.to("meta"), w)


def test_arguments_on_another_device_than_optimized_for_are_refused(fast):
    # One CPU here: the program is made to believe it was optimized for a GPU.
    assert fast.binding.device == torch.device("cpu")
    fast.binding.device = torch.device("cuda", 0)
    try:
        with pytest.raises(BindingError, match=r"argument 0 \(x\) is on cpu, but the program was optimized for cuda:0"):
            fast(*inputs(6))
    finally:
        fast.binding.device = torch.device("cpu")
    torch.testing.assert_close(fast(*inputs(6)), relu_matmul(*inputs(6)))


def test_cli_asked_for_cuda_without_a_gpu_is_a_usage_error(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    target = tmp_path / "model.py"
    target.write_text("import torch\n\ndef gate(x, w):\n    return torch.relu(x @ w)\n")
    rc = cli.main(["optimize", f"{target}:gate", "--inputs", "f32[5,8],f32[8,3]", "--device", "cuda", "--no-cache",
                   "-q"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "--device cuda: no CUDA GPU is available" in err and "Traceback" not in err


def test_cli_meta_device_is_a_usage_error(tmp_path, capsys):
    target = tmp_path / "model.py"
    target.write_text("import torch\n\ndef gate(x, w):\n    return torch.relu(x @ w)\n")
    rc = cli.main(["optimize", f"{target}:gate", "--inputs", "f32[5,8],f32[8,3]", "--device", "meta", "--no-cache",
                   "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and "meta device" in err and "Traceback" not in err, err


@pytest.mark.parametrize("dtype", [torch.int64, torch.int16, torch.uint8])
def test_integer_inputs_of_other_widths_than_i32(dtype):
    # The IR's integers are i32: the program takes the user's dtype, computes
    # in 32 bits and gives back the user's dtype.
    def int_matmul(a, b):
        return a @ b + 1

    g = torch.Generator().manual_seed(0)
    a, b = (torch.randint(0, 9, s, generator=g).to(dtype) for s in ((5, 7), (7, 6)))
    f = api.optimize(int_matmul, a, b, **LIMITS)
    for seed in (1, 2):
        g = torch.Generator().manual_seed(seed)
        a, b = (torch.randint(0, 9, s, generator=g).to(dtype) for s in ((5, 7), (7, 6)))
        y = f(a, b)
        assert y.dtype == int_matmul(a, b).dtype
        assert torch.equal(y, int_matmul(a, b))


def test_int64_values_past_int32_are_refused_not_wrapped():
    def scale(a):
        return a * 2

    a = torch.arange(35, dtype=torch.int64).reshape(5, 7)
    f = api.optimize(scale, a, **LIMITS)
    assert torch.equal(f(a), scale(a))
    big = a + (1 << 40)
    with pytest.raises(BindingError, match=r"argument 0 \(a\) holds int64 values outside the range of int32"):
        f(big)


def test_complex_inputs_are_an_error_naming_the_input():
    with pytest.raises(FrontendError, match="input a has dtype torch.complex64, which the IR has no type for"):
        api.optimize(lambda a: a * 2, torch.randn(5, 7, dtype=torch.complex64), **LIMITS)


def test_zero_size_inputs_are_an_error_not_a_crash():
    # The IR has no empty tensors (docs/ir.md): the extent is refused by name.
    with pytest.raises(Exception, match=r"bad extent `0` for dim .*expected a positive integer"):
        api.optimize(relu_matmul, torch.randn(0, 7), torch.randn(7, 6), **LIMITS)
