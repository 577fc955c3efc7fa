"""Loading an emitted Triton module, for the GPU or for Triton's interpreter.

Triton decides at decoration time whether a ``@triton.jit`` function compiles
for the GPU or runs in its CPU interpreter: the decorator reads
``TRITON_INTERPRET`` when the module is imported. So the mode is chosen here,
per module, by setting the variable only while the module executes; kernels
of both kinds can then live in one process. The module is imported from a
file because Triton reads each kernel's source text with ``inspect``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import functools
import threading
import types
from contextlib import contextmanager
from pathlib import Path

_LOCK = threading.Lock()
_TEMP_DIR: tempfile.TemporaryDirectory | None = None
# Loaded modules by (source hash, interpret): loading the same source twice
# would compile its kernels twice.
_LOADED: dict[tuple[str, bool], types.ModuleType] = {}


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def _temp_dir() -> Path:
    global _TEMP_DIR
    if _TEMP_DIR is None:
        _TEMP_DIR = tempfile.TemporaryDirectory(prefix="eqiforge-kernels-")
    return Path(_TEMP_DIR.name)


def _write_module(folder: Path, name: str, source: str) -> Path:
    """The module file `name` in `folder` holding `source`, written
    atomically if missing or different (another process may be writing the
    same file: the name is the source's hash, so both write the same text)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if not path.exists() or path.read_bytes() != source.encode():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            tmp.write_text(source)
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()
    return path


def _module_file(directory: Path | None, name: str, source: str) -> Path:
    """The module file in `directory` (the cache's), or in a temporary
    folder when there is none or it cannot be written: a cache folder that is
    read-only, full or a file costs the cache, not the result."""
    if directory is not None:
        try:
            return _write_module(directory, name, source)
        except OSError as e:
            import warnings

            from .cache import CacheWarning

            warnings.warn(f"eqiforge cache: could not write kernel module {directory / name} ({e}); "
                          "using a temporary folder", CacheWarning, stacklevel=4)
    return _write_module(_temp_dir(), name, source)


def kernels_of(module: types.ModuleType) -> dict[str, object]:
    """The module's Triton kernels by name (JIT or interpreted functions)."""
    from triton.runtime.jit import KernelInterface

    return {name: obj for name, obj in vars(module).items() if isinstance(obj, KernelInterface)}


def is_interpreted(kernel: object) -> bool:
    from triton.runtime.jit import JITFunction

    return not isinstance(kernel, JITFunction)


_SCOPE_LOCK = threading.RLock()
_TWINS: dict[int, object] = {}


def _library_homes() -> list:
    """Modules and classes of triton.language that hold @triton.jit functions."""
    import triton.language as tl

    homes = [tl, tl.tensor]
    for name in ("standard", "math", "core", "random"):
        sub = getattr(tl, name, None)
        if isinstance(sub, types.ModuleType):
            homes.append(sub)
    return homes


@functools.lru_cache(maxsize=None)
def _import_lazy_parts() -> None:
    """Parts of Triton imported on first use that copy library functions and
    check their kind (gluon): imported now, before any twin is in place."""
    try:
        import triton.experimental.gluon  # noqa: F401
    except Exception:  # noqa: BLE001 -- absent or broken in this Triton: nothing to protect
        pass


@contextmanager
def interpreter_scope():
    """Interpreted twins of Triton's library jit functions, for one call."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    _import_lazy_parts()
    with _SCOPE_LOCK:
        swapped = []
        try:
            for home in _library_homes():
                for name, value in list(vars(home).items()):
                    if isinstance(value, JITFunction):
                        twin = _TWINS.get(id(value))
                        if twin is None:
                            twin = _TWINS[id(value)] = InterpretedFunction(value.fn)
                        setattr(home, name, twin)
                        swapped.append((home, name, value))
            yield
        finally:
            for home, name, value in reversed(swapped):
                setattr(home, name, value)


def _interpreted(forward):
    @functools.wraps(forward)
    def run(*args, **kwargs):
        with interpreter_scope():
            return forward(*args, **kwargs)

    run.__wrapped_forward__ = forward
    return run


def load_copy(source: str, directory: Path | None = None) -> types.ModuleType:
    """A second, private instance of the GPU module load_module(source) gives:
    the same name and file (so Triton's on-disk cache keys of its kernels are
    the same), not registered anywhere, its kernels' in-memory caches its own.
    The tuner compiles configurations ahead in such copies on other threads
    and the module proper then finds them in the on-disk cache."""
    import triton.language  # noqa: F401

    digest = source_hash(source)
    with _LOCK:
        path = _module_file(directory, f"eqf_{digest[:24]}.py", source)
        return _exec_module(f"eqiforge_kernels_{digest[:24]}_gpu", path, False, register=False)


def _exec_module(name: str, path: Path, interpret: bool, register: bool) -> types.ModuleType:
    """Executes the module file at `path` as `name` with Triton's decorators
    built for the interpreter or the GPU; `register`: in sys.modules (before
    it runs, as imports do)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    saved = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1" if interpret else "0"
    try:
        if register:
            sys.modules[name] = module
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = saved
    return module


@functools.lru_cache(maxsize=None)
def _interpreter_compat() -> None:
    """Where Triton's interpreter computes other values than the GPU, the same
    corrections as eqiforge.check's (bf16 dot operands multiplied as their
    uint16 bit patterns, float32 to bf16 by truncation, scalar indices under
    NumPy 2): without them every bf16 matmul fails verification on the CPU
    path and optimize raises NoValidCandidate for it."""
    from ..check import _bf16_dot_compat, _bf16_rounding_compat, _scalar_index_compat

    _scalar_index_compat()
    _bf16_dot_compat()
    _bf16_rounding_compat()


def load_module(source: str, interpret: bool, directory: Path | None = None) -> types.ModuleType:
    """Imports an emitted module; `interpret` runs its kernels in Triton's CPU
    interpreter. The file is written to `directory` (a temporary one if None)."""
    # Triton's library must be decorated for the process's own mode, not for
    # the mode of the first module loaded: import it before touching the variable.
    import triton.language  # noqa: F401

    if interpret:
        _interpreter_compat()
    digest = source_hash(source)
    with _LOCK:
        loaded = _LOADED.get((digest, interpret))
        if loaded is not None:
            return loaded
        path = _module_file(directory, f"eqf_{digest[:24]}.py", source)
        name = f"eqiforge_kernels_{digest[:24]}_{'interp' if interpret else 'gpu'}"
        try:
            module = _exec_module(name, path, interpret, register=True)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        kernels = kernels_of(module)
        wrong = [n for n, k in kernels.items() if is_interpreted(k) != interpret]
        if wrong:
            # Something set triton.knobs.runtime.interpret explicitly, which
            # overrides the environment variable.
            raise RuntimeError(
                f"kernels {', '.join(wrong)} were built {'for the GPU' if interpret else 'for the interpreter'} "
                f"although {'the interpreter' if interpret else 'the GPU'} was asked for; "
                "is triton.knobs.runtime.interpret set?"
            )
        if not callable(getattr(module, "forward", None)):
            raise RuntimeError("the emitted module has no forward function")
        if interpret:
            module.forward = _interpreted(module.forward)
        _LOADED[(digest, interpret)] = module
        return module
