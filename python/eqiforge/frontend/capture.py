"""Capturing a PyTorch function or module as an ATen graph.

``capture`` runs ``torch.export`` (strict, i.e. through TorchDynamo, by
default: it records the user's full stack for every node, which error messages
quote; non-strict export keeps only ``forward`` frames) and then decomposes
every operator the translator has no entry for with PyTorch's own
decompositions. The graph that comes out uses the translator's op set plus
whatever PyTorch could not decompose, which the translator reports.
"""

from __future__ import annotations

import inspect
import os
import re
import types
from dataclasses import dataclass, field
from typing import Any

import torch

from .errors import FrontendError

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_FRONTEND_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


@dataclass
class InputSpec:
    """One tensor input of the captured graph.

    kind: "arg" (a positional argument; `source` is its index), "parameter" or
    "buffer" (of the module; `source` is its qualified name, e.g. "lin.weight"),
    or "constant" (a tensor the function closes over; `source` is the key in the
    exported program's constants).
    """

    placeholder: str
    name: str
    kind: str
    source: Any
    shape: tuple[int, ...]
    dtype: torch.dtype


@dataclass
class Graph:
    """A captured program: the exported ATen graph and how to feed it."""

    program: torch.export.ExportedProgram
    name: str
    inputs: list[InputSpec]
    # Non-tensor arguments are specialized into the graph: {arg index: value}.
    constant_args: dict[int, Any] = field(default_factory=dict)
    module: torch.nn.Module | None = None

    @property
    def graph(self) -> torch.fx.Graph:
        return self.program.graph_module.graph


class _FunctionModule(torch.nn.Module):
    """Lets torch.export capture a plain function."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _named_forward(fn):
    """A plain function's code under the name ``forward``. Non-strict export
    records only the stack frames of functions named ``forward`` (a module's),
    so the lines of a plain function would be missing from every node's stack
    trace and errors could not quote them. Strict export falls back to
    non-strict whenever TorchDynamo cannot trace, e.g. for a function whose
    module is not importable by name (loaded from a file without an entry in
    ``sys.modules``, or made by ``exec``)."""
    if not isinstance(fn, types.FunctionType) or fn.__code__.co_name == "forward":
        return fn
    renamed = types.FunctionType(fn.__code__.replace(co_name="forward"), fn.__globals__, "forward",
                                 fn.__defaults__, fn.__closure__)
    renamed.__kwdefaults__ = fn.__kwdefaults__
    return renamed


def identifier(text: str, fallback: str) -> str:
    """A name the IR reads as a name: letters, digits, _; never a number."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_")
    if not name:
        name = fallback
    if name[0].isdigit():
        name = "_" + name
    if name.lower() in ("inf", "nan", "infinity"):
        name += "_"
    return name


def _arg_names(fn, count: int) -> list[str]:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names: list[str] = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            names.extend(f"{p.name}_{i}" for i in range(count - len(names)))
            break
    names.extend(f"arg{i}" for i in range(len(names), count))
    return [identifier(n, f"arg{i}") for i, n in enumerate(names[:count])]


def _constant_name(target: str) -> str:
    # torch.export names a tensor read from a global W "G____import___main_____W".
    tail = target.rsplit("__", 1)[-1] if target.startswith("G_") else target
    return identifier(tail, "const")


def _decompose(program: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """Decomposes the operators the translator has no entry for, if any."""
    from .ops import TABLE, IGNORED

    known = set(TABLE) | set(IGNORED)
    pending = [
        n for n in program.graph.nodes if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload)
        and n.target not in known
    ]
    if not pending:
        return program
    table = torch.export.default_decompositions()
    for op in known:
        table.pop(op, None)
    try:
        return program.run_decompositions(table)
    except Exception:  # noqa: BLE001 -- then the translator names the op it cannot handle
        return program


def capture(fn_or_module, *example_inputs, strict: bool = True, name: str | None = None) -> Graph:
    """Exports fn_or_module called on example_inputs to an ATen graph.

    Tensor arguments become graph inputs; other arguments (ints, floats) are
    specialized into the graph and recorded in `constant_args`. Module
    parameters and buffers, and tensors a function closes over, become extra
    inputs. Shapes are static: the example inputs' shapes are the program's.
    """
    if isinstance(fn_or_module, torch.nn.Module):
        module = fn_or_module
        forward = module.forward
        default_name = type(module).__name__
    elif callable(fn_or_module):
        module = _FunctionModule(fn_or_module)
        forward = fn_or_module
        default_name = getattr(fn_or_module, "__name__", "program")
    else:
        raise FrontendError(f"capture expects a function or a torch.nn.Module, got {type(fn_or_module).__name__}")
    for i, x in enumerate(example_inputs):
        if not isinstance(x, (torch.Tensor, bool, int, float)):
            raise FrontendError(
                f"argument {i} is a {type(x).__name__}: the front end takes tensors and numbers as arguments"
            )

    # For non-strict export, a plain function runs as `forward` (_named_forward).
    loose = module if not isinstance(module, _FunctionModule) else _FunctionModule(_named_forward(fn_or_module))
    try:
        program = torch.export.export(module if strict else loose, tuple(example_inputs), strict=strict)
    except Exception as e:  # noqa: BLE001 -- any capture failure becomes one clear error
        if strict:
            try:  # TorchDynamo could not trace it; the non-strict path often can
                program = torch.export.export(loose, tuple(example_inputs), strict=False)
            except Exception:
                raise FrontendError(f"torch.export could not capture the program: {e}") from e
        else:
            raise FrontendError(f"torch.export could not capture the program: {e}") from e
    program = _decompose(program)

    arg_names = _arg_names(forward, len(example_inputs))
    sig = program.graph_signature
    kinds = torch.export.graph_signature.InputKind
    inputs: list[InputSpec] = []
    constant_args: dict[int, Any] = {}
    placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    user_index = 0
    for spec in sig.input_specs:
        pname = spec.arg.name
        meta = placeholders[pname].meta.get("val")
        if spec.kind == kinds.USER_INPUT:
            index = user_index
            user_index += 1
            if not isinstance(meta, torch.Tensor):
                constant_args[index] = example_inputs[index]
                continue
            inputs.append(InputSpec(pname, arg_names[index], "arg", index, tuple(meta.shape), meta.dtype))
        elif spec.kind in (kinds.PARAMETER, kinds.BUFFER):
            kind = "parameter" if spec.kind == kinds.PARAMETER else "buffer"
            inputs.append(
                InputSpec(pname, identifier(spec.target, kind), kind, spec.target, tuple(meta.shape), meta.dtype)
            )
        elif spec.kind == kinds.CONSTANT_TENSOR:
            inputs.append(
                InputSpec(pname, _constant_name(spec.target), "constant", spec.target, tuple(meta.shape), meta.dtype)
            )
        else:
            raise FrontendError(f"graph input {pname} of kind {spec.kind.name} is not supported")
    # User arguments first (in call order), then parameters, buffers, constants.
    order = {"arg": 0, "parameter": 1, "buffer": 2, "constant": 3}
    inputs.sort(key=lambda s: (order[s.kind], s.source if s.kind == "arg" else 0))
    seen: set[str] = set()
    for s in inputs:  # an argument "weight" and a parameter "weight" stay apart
        base, i = s.name, 1
        while s.name in seen:
            s.name = f"{base}_{i}"
            i += 1
        seen.add(s.name)
    return Graph(
        program=program,
        name=identifier(name or default_name, "program"),
        inputs=inputs,
        constant_args=constant_args,
        module=fn_or_module if isinstance(fn_or_module, torch.nn.Module) else None,
    )


# ---- where a node came from ------------------------------------------------------

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in [^\n]*\n([^\n]*)')


def source_of(node: torch.fx.Node) -> tuple[str, str]:
    """("file.py:LINE", "source text") of the innermost frame of the user's code
    (not PyTorch's, not the front end's) that created `node`; ("", "") if unknown."""
    trace = node.meta.get("stack_trace") or ""
    best = ("", "")
    for path, line, text in _FRAME.findall(trace):
        full = os.path.abspath(path)
        if full.startswith(_TORCH_DIR) or full.startswith(_FRONTEND_DIR):
            continue
        best = (f"{os.path.basename(path)}:{line}", text.strip())
    return best
