"""``torch.compile(model, backend="eqiforge")``.

TorchDynamo hands each captured graph to ``eqiforge_backend``, which optimizes
it like ``eqiforge.optimize`` with ``unsupported="fallback"``: operations the
IR cannot express, and regions that fail to translate or verify, run in
PyTorch. Graph breaks are Dynamo's business: the code between graphs runs in
Python as usual. A graph eqiforge cannot take at all (dynamic shapes,
gradients required, a capture failure) runs in PyTorch whole, with a warning.

Options go through ``torch.compile(..., options={"budget_s": 10})`` or
``backend=eqiforge.backend.make_backend(budget_s=10)``; a bad option raises
``OptionError`` when the first graph is compiled.

The backend is registered with Dynamo when this module is imported, and by the
package's ``torch_dynamo_backends`` entry point, so the name works without an
explicit import once eqiforge is installed.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import torch

from .options import make_options


class FallbackWarning(UserWarning):
    """A graph (or part of one) that runs in PyTorch instead of eqiforge's kernels."""


def _realize(x: Any) -> Any:
    """A real tensor for a fake one (Dynamo passes FakeTensors): same shape,
    dtype, strides and device, random values. The values do not matter for
    compiling: verification draws its own inputs."""
    from torch._subclasses.fake_tensor import is_fake

    if not isinstance(x, torch.Tensor) or not is_fake(x):
        return x
    out = torch.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype, device=x.device)
    if out.is_floating_point():
        out.uniform_(-1, 1)
    elif out.dtype == torch.bool:
        out.random_(0, 2)
    else:
        out.random_(0, 8)
    return out


def _eager(gm: torch.fx.GraphModule, why: str) -> Callable:
    warnings.warn(f"eqiforge backend: this graph runs in PyTorch: {why}", FallbackWarning, stacklevel=3)
    return gm.forward


def eqiforge_backend(gm: torch.fx.GraphModule, example_inputs: list, options: dict | None = None, **kwargs):
    """A TorchDynamo backend: compiles one captured graph."""
    from .api import run_pipeline
    from .frontend import FrontendError
    from .runtime.tuner import NoValidCandidate

    given = {**(options or {}), **{k: v for k, v in kwargs.items() if k != "mode"}}
    given.setdefault("unsupported", "fallback")
    make_options(**given)  # bad options fail here, before any work
    inputs = [_realize(x) for x in example_inputs]
    if not all(isinstance(x, torch.Tensor) for x in inputs):
        kinds = sorted({type(x).__name__ for x in inputs if not isinstance(x, torch.Tensor)})
        return _eager(gm, f"it takes non-tensor inputs ({', '.join(kinds)}), e.g. dynamic shapes")
    if torch.is_grad_enabled() and any(x.requires_grad for x in inputs):
        return _eager(gm, "it needs gradients; eqiforge compiles inference graphs (use torch.no_grad())")
    try:
        program = run_pipeline(gm, tuple(inputs), make_options(**given), strict=False)
    except (FrontendError, NoValidCandidate) as e:
        return _eager(gm, str(e).splitlines()[0])
    # Dynamo must not trace into the kernels' launch path (nor into Triton's
    # interpreter, whose rewritten functions it cannot handle).
    return torch._dynamo.disable(program)


def make_backend(**options) -> Callable:
    """A backend with these eqiforge options bound (checked now)."""
    make_options(**options)

    def backend(gm, example_inputs, **kwargs):
        return eqiforge_backend(gm, example_inputs, options={**options, **(kwargs.pop("options", None) or {})},
                                **kwargs)

    return backend


def register() -> None:
    """Registers the backend under the name "eqiforge" (idempotent)."""
    from importlib.metadata import EntryPoint

    from torch._dynamo.backends import registry

    if isinstance(registry._BACKENDS.get("eqiforge"), EntryPoint) and "eqiforge" not in registry._COMPILER_FNS:
        return  # Dynamo is loading the entry point right now and registers what it returns
    if registry._COMPILER_FNS.get("eqiforge") is not eqiforge_backend:
        registry._COMPILER_FNS.pop("eqiforge", None)
        registry.register_backend(eqiforge_backend, name="eqiforge")


register()
