"""The on-disk cache of tuned programs.

An entry is keyed by the program (a hash of its IR text, which holds every
extent and dtype), the shapes and dtypes of the tensors it is called with,
the GPU (or "interpreter" without one), the options that change the choice,
and the versions of eqiforge (including a fingerprint of its compiled core),
PyTorch, Triton and Python.

The file name comes from every part of the key except the versions, so each
program has one slot per GPU: an entry written by other versions is *stale*,
found, reported with a warning, ignored, and replaced by the next store. An
entry that cannot be read, does not parse, fails its checksum or belongs to
another key is *corrupt*: also reported and ignored, never used. So is a
file that parses and passes its checksum but is not laid out as this
eqiforge writes entries (fields missing or of the wrong type: a file from
another tool, or written by hand). Writes go to a temporary file in the same
folder and are renamed into place (``os.replace``), so a reader never sees
half an entry and processes sharing the folder never see each other's
partial writes; the last complete write wins.

The checksum catches damage and edits (an entry whose kernel source was
changed is corrupt); it is not a signature: whoever can write the cache
folder can also write the Python modules under it that are imported.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = 1


class CacheWarning(UserWarning):
    """A cache entry that was ignored (corrupt or stale) or could not be written."""


@functools.lru_cache(maxsize=None)
def _file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def versions() -> dict[str, str]:
    """The versions a tuned program depends on."""
    import torch

    from .. import _core

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = "none"
    try:
        from importlib.metadata import version

        eqf = version("eqiforge")
    except Exception:  # noqa: BLE001 -- a build tree that is not installed
        eqf = "0+unknown"
    core = getattr(_core, "__file__", None)
    return {
        "eqiforge": eqf,
        # The version number is not bumped for every change of the core; its
        # compiled file is, in effect, the version of search and codegen.
        "eqiforge_core": _file_digest(core) if core and os.path.exists(core) else "unknown",
        "torch": torch.__version__,
        "triton": triton_version,
        "python": platform.python_version(),
    }


def make_key(program: str, tensors: list[tuple[tuple[int, ...], str]], gpu: str, options: dict[str, Any],
             version_info: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "program_sha256": hashlib.sha256(program.encode()).hexdigest(),
        "tensors": [[list(shape), str(dtype)] for shape, dtype in tensors],
        "gpu": gpu,
        "options": options,
        "versions": version_info if version_info is not None else versions(),
    }


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def slot_name(key: dict[str, Any]) -> str:
    """The entry's file name: every part of the key but the versions."""
    identity = {k: v for k, v in key.items() if k != "versions"}
    return hashlib.sha256(_canonical(identity).encode()).hexdigest()[:32] + ".json"


@dataclass
class Entry:
    path: Path
    key: dict[str, Any]
    payload: dict[str, Any]


class Cache:
    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def path_for(self, key: dict[str, Any]) -> Path:
        name = slot_name(key)
        return self.directory / name[:2] / name

    def load(self, key: dict[str, Any]) -> Entry | None:
        """The entry for `key`, or None (missing, corrupt or stale, the last two
        with a CacheWarning)."""
        path = self.path_for(key)
        if not path.exists():
            return None
        entry = read_entry(path, check_payload=False)
        if isinstance(entry, str):
            _warn(f"eqiforge cache: ignoring corrupt entry {path}: {entry}; the program will be tuned again")
            return None
        stored = entry.key
        if stored["versions"] != key["versions"]:
            changed = sorted(
                f"{k} {stored['versions'].get(k, '?')} -> {v}"
                for k, v in key["versions"].items()
                if stored["versions"].get(k) != v
            )
            _warn(f"eqiforge cache: ignoring stale entry {path} (written with other versions: "
                  f"{', '.join(changed) or 'unknown'}); the program will be tuned again")
            return None
        if _canonical(stored) != _canonical(key):
            _warn(f"eqiforge cache: ignoring entry {path}: it belongs to another program (hash collision or "
                  "a copied file); the program will be tuned again")
            return None
        problem = payload_problem(entry.payload)
        if problem is not None:
            _warn(f"eqiforge cache: ignoring corrupt entry {path}: not an entry as this eqiforge writes them: "
                  f"{problem}; the program will be tuned again")
            return None
        return entry

    def store(self, key: dict[str, Any], payload: dict[str, Any]) -> Path | None:
        """Writes the entry atomically; returns its path (None, with a warning,
        when the folder is not writable)."""
        path = self.path_for(key)
        try:
            body = {"format": FORMAT, "key": key, "payload": payload,
                    "checksum": hashlib.sha256(_canonical({"key": key, "payload": payload}).encode()).hexdigest()}
        except (TypeError, ValueError) as e:  # a value JSON cannot hold: nothing is written
            _warn(f"eqiforge cache: could not write {path}: the entry is not JSON ({e})")
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
            try:
                with os.fdopen(fd, "w") as f:
                    json.dump(body, f, indent=1, sort_keys=True)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        except OSError as e:
            _warn(f"eqiforge cache: could not write {path}: {e}")
            return None
        return path

    def entries(self) -> list[Path]:
        """Every entry file, most recently written first."""
        if not self.directory.is_dir():
            return []
        dated = []
        for p in self.directory.glob("*/*.json"):
            if p.name.startswith(".tmp-"):
                continue
            try:
                dated.append((p.stat().st_mtime, p))
            except OSError:  # removed since the listing (another process clearing the cache)
                continue
        return [p for _, p in sorted(dated, key=lambda t: t[0], reverse=True)]


def _key_problem(key: dict[str, Any]) -> str | None:
    """Why `key` is not laid out as make_key lays keys out, or None."""
    checks = (
        ("program_sha256", lambda v: isinstance(v, str)),
        ("tensors", lambda v: isinstance(v, list)),
        ("gpu", lambda v: isinstance(v, str)),
        ("options", lambda v: isinstance(v, dict)),
        ("versions", lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values())),
    )
    for name, ok in checks:
        if name not in key:
            return f"its key has no {name!r}"
        if not ok(key[name]):
            return f"its key's {name!r} is a {type(key[name]).__name__} of the wrong layout"
    return None


def _is_count(v: Any) -> bool:
    # Launch parameters reach Triton as int32 (block sizes, warps, stages).
    return isinstance(v, int) and not isinstance(v, bool) and 0 < v < 1 << 31


def payload_problem(payload: dict[str, Any]) -> str | None:
    """Why `payload` is not a tuned program as eqiforge.optimize stores it
    (Triton source, candidate program, launch parameters), or None."""
    for name in ("source", "program"):
        if not isinstance(payload.get(name), str):
            return f"its payload has no {name!r} text"
    params = payload.get("params")
    if not isinstance(params, dict) or not all(isinstance(k, str) and _is_count(v) for k, v in params.items()):
        return "its payload's 'params' are not launch parameters (names to positive 32-bit integers)"
    if not isinstance(payload.get("report"), dict):
        return "its payload has no 'report' object"
    return None


def read_entry(path: Path, check_payload: bool = True) -> Entry | str:
    """The entry in a file, or a sentence saying why it cannot be used.
    `check_payload=False` leaves the payload's layout unchecked (Cache.load
    checks it after the versions, so that an entry of another version is
    reported as stale, whatever its layout)."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        return f"cannot be read ({e})"
    try:
        body = json.loads(text)
    except json.JSONDecodeError as e:
        return f"not valid JSON ({e.msg} at line {e.lineno})"
    except (RecursionError, ValueError) as e:
        # Nesting deeper than the parser's recursion limit, or a number too
        # long to convert: not something this eqiforge wrote.
        return f"not valid JSON ({type(e).__name__})"
    if not isinstance(body, dict):
        return "not a JSON object"
    if body.get("format") != FORMAT:
        return f"format {body.get('format')!r}, this eqiforge reads format {FORMAT}"
    key, payload = body.get("key"), body.get("payload")
    if not isinstance(key, dict) or not isinstance(payload, dict):
        return "no key or payload"
    expected = hashlib.sha256(_canonical({"key": key, "payload": payload}).encode()).hexdigest()
    if body.get("checksum") != expected:
        return "checksum mismatch (the file was changed or damaged)"
    problem = _key_problem(key) or (payload_problem(payload) if check_payload else None)
    if problem is not None:
        return f"not an entry as this eqiforge writes them: {problem}"
    return Entry(Path(path), key, payload)


def _warn(message: str) -> None:
    warnings.warn(message, CacheWarning, stacklevel=3)


def default_gpu_name(device) -> str:
    import torch

    if device is not None and getattr(device, "type", None) == "cuda":
        return torch.cuda.get_device_name(device)
    return "interpreter"


__all__ = ["Cache", "CacheWarning", "Entry", "default_gpu_name", "make_key", "payload_problem", "read_entry", "slot_name",
           "versions"]
