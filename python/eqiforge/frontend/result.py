"""What the front end hands to the rest of eqiforge: the IR text and how to bind
PyTorch tensors to its inputs and read its outputs back in PyTorch's layout."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from .capture import Graph
from .errors import FrontendError


@dataclass(frozen=True)
class InputInfo:
    """One IR input.

    kind/source: where the tensor comes from -- "arg" (source = argument index),
    "parameter" / "buffer" (source = the module's qualified name, "lin.weight"),
    "constant" (source = key in the exported program's constants).
    shape, dtype: of the PyTorch tensor. layout: the IR dims, in the tensor's
    dim order with its size-1 dims left out (the IR broadcasts by name), so a
    contiguous tensor reshaped to `ir_shape` has the IR's row-major layout.
    """

    name: str
    kind: str
    source: Any
    shape: tuple[int, ...]
    dtype: torch.dtype
    layout: tuple[str, ...]
    ir_shape: tuple[int, ...]


@dataclass(frozen=True)
class OutputInfo:
    """One IR output: its PyTorch shape and dtype and its IR layout (the dims
    in the output tensor's dim order, size-1 dims left out)."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    layout: tuple[str, ...]


@dataclass
class FrontendResult:
    text: str
    name: str
    inputs: list[InputInfo]
    outputs: list[OutputInfo]
    dims: dict[str, int]
    graph: Graph
    # Pytree of the outputs (tuple, single tensor, ...), to rebuild the structure.
    out_spec: Any = None
    constant_args: dict[int, Any] = field(default_factory=dict)

    @property
    def input_names(self) -> list[str]:
        return [i.name for i in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [o.name for o in self.outputs]

    def input_tensors(self, *args) -> dict[str, torch.Tensor]:
        """{IR input name: tensor in the IR layout} for a call with these
        arguments; parameters and buffers are read from the module now."""
        program = self.graph.program
        state = {}
        if self.graph.module is not None:
            state = dict(self.graph.module.named_parameters(remove_duplicate=False))
            state.update(self.graph.module.named_buffers(remove_duplicate=False))
        for index, value in self.constant_args.items():
            if index < len(args) and args[index] != value:
                raise FrontendError(
                    f"argument {index} is {args[index]!r}, but the program was captured with {value!r} "
                    "(numbers are specialized into the program)"
                )
        out: dict[str, torch.Tensor] = {}
        for info in self.inputs:
            if info.kind == "arg":
                if info.source >= len(args):
                    raise FrontendError(f"missing argument {info.source} ({info.name})")
                t = args[info.source]
            elif info.kind in ("parameter", "buffer"):
                t = state[info.source] if info.source in state else program.state_dict[info.source]
            else:
                t = program.constants[info.source]
            if not isinstance(t, torch.Tensor) or tuple(t.shape) != info.shape:
                got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
                raise FrontendError(f"input {info.name} has shape {got}, the program was captured with {info.shape}")
            out[info.name] = t.detach().contiguous().reshape(info.ir_shape)
        return out

    def outputs_to_torch(self, values: dict[str, Any]):
        """The IR's outputs ({name: array in the IR layout}) as PyTorch tensors
        with the original shapes, dtypes and output structure."""
        flat = []
        for info in self.outputs:
            t = torch.as_tensor(values[info.name]).reshape(info.shape).to(info.dtype)
            flat.append(t)
        if self.out_spec is None:
            return tuple(flat)
        return torch.utils._pytree.tree_unflatten(flat, self.out_spec)
