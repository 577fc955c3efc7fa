"""The on-disk cache: hit, miss, corrupt entries, entries from other versions,
atomic writes. An entry that cannot be trusted is reported and never used."""

import json
import os
import warnings

import pytest

from eqiforge.runtime import cache as cache_mod
from eqiforge.runtime.cache import Cache, CacheWarning, make_key, read_entry, slot_name

VERSIONS = {"eqiforge": "0.1.0", "eqiforge_core": "abc", "torch": "2.13", "triton": "3.9", "python": "3.11"}
PROGRAM = "(program p (dims (m 4)) (input x f32 [m]) (output y [m] (exp x)))"


def key(program=PROGRAM, shape=(4,), gpu="NVIDIA H200", versions=None, options=None):
    return make_key(program, [(shape, "torch.float32")], gpu, options or {"target": "h200"},
                    versions or dict(VERSIONS))


PAYLOAD = {"program": "(tiled ...)", "source": "def forward(x): ...", "params": {"block_m0": 16}}


def load_quietly(c: Cache, k):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a hit or a miss warns about nothing
        return c.load(k)


def test_store_then_load_is_a_hit(tmp_path):
    c = Cache(tmp_path)
    path = c.store(key(), PAYLOAD)
    assert path is not None and path.exists() and path.parent.parent == tmp_path
    entry = load_quietly(c, key())
    assert entry is not None and entry.payload == PAYLOAD and entry.path == path


def test_other_program_shape_gpu_or_options_is_a_miss(tmp_path):
    c = Cache(tmp_path)
    c.store(key(), PAYLOAD)
    assert load_quietly(c, key(program=PROGRAM.replace("exp", "log"))) is None
    assert load_quietly(c, key(shape=(8,))) is None
    assert load_quietly(c, key(gpu="NVIDIA A100")) is None
    assert load_quietly(c, key(options={"target": "a100"})) is None
    assert load_quietly(Cache(tmp_path / "elsewhere"), key()) is None


def test_versions_are_not_in_the_slot_name():
    a = key()
    b = key(versions={**VERSIONS, "triton": "3.6"})
    assert slot_name(a) == slot_name(b)
    assert slot_name(a) != slot_name(key(shape=(8,)))


def test_entry_from_other_versions_is_stale_ignored_and_replaced(tmp_path):
    c = Cache(tmp_path)
    old = key(versions={**VERSIONS, "triton": "3.6", "eqiforge_core": "old"})
    path = c.store(old, PAYLOAD)
    with pytest.warns(CacheWarning, match="stale") as record:
        assert c.load(key()) is None
    message = str(record[0].message)
    assert "triton 3.6 -> 3.9" in message and "eqiforge_core old -> abc" in message and str(path) in message
    # The next store takes the same slot.
    assert c.store(key(), {"program": "new"}) == path
    assert load_quietly(c, key()).payload == {"program": "new"}


@pytest.mark.parametrize(
    "damage, reason",
    [
        (lambda text: text[: len(text) // 2], "not valid JSON"),
        (lambda text: "\x00\x01garbage", "not valid JSON"),
        (lambda text: "[1, 2, 3]", "not a JSON object"),
        (lambda text: text.replace('"block_m0": 16', '"block_m0": 32'), "checksum mismatch"),
        (lambda text: text.replace('"format": 1', '"format": 99'), "format 99"),
    ],
    ids=["truncated", "garbage", "not-an-object", "edited", "other-format"],
)
def test_corrupt_entry_is_ignored_with_a_warning(tmp_path, damage, reason):
    c = Cache(tmp_path)
    path = c.store(key(), PAYLOAD)
    path.write_text(damage(path.read_text()))
    with pytest.warns(CacheWarning, match="corrupt") as record:
        assert c.load(key()) is None
    assert reason in str(record[0].message)
    assert isinstance(read_entry(path), str)


def test_entry_of_another_key_in_the_slot_is_not_used(tmp_path):
    c = Cache(tmp_path)
    other = key(shape=(8,))
    c.store(other, PAYLOAD)
    # A file copied (or colliding) into the slot of another key.
    os.makedirs(c.path_for(key()).parent, exist_ok=True)
    c.path_for(other).rename(c.path_for(key()))
    with pytest.warns(CacheWarning, match="another program"):
        assert c.load(key()) is None


def test_writes_are_atomic(tmp_path, monkeypatch):
    c = Cache(tmp_path)
    path = c.store(key(), PAYLOAD)
    before = path.read_text()

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(cache_mod.json, "dump", crash)
    with pytest.warns(CacheWarning, match="could not write"):
        assert c.store(key(), {"program": "new"}) is None
    # The old entry is whole and no temporary file is left behind.
    assert path.read_text() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    monkeypatch.undo()
    assert load_quietly(c, key()).payload == PAYLOAD


def test_unwritable_cache_folder_warns_and_carries_on(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    c = Cache(blocker / "cache")
    with pytest.warns(CacheWarning, match="could not write"):
        assert c.store(key(), PAYLOAD) is None
    assert load_quietly(c, key()) is None


def test_entries_are_listed_newest_first(tmp_path):
    c = Cache(tmp_path)
    a = c.store(key(), PAYLOAD)
    b = c.store(key(shape=(8,)), PAYLOAD)
    os.utime(a, (1, 1))
    assert c.entries() == [b, a]
    assert Cache(tmp_path / "none").entries() == []


def test_entry_file_is_readable_json(tmp_path):
    path = Cache(tmp_path).store(key(), PAYLOAD)
    body = json.loads(path.read_text())
    assert body["key"]["gpu"] == "NVIDIA H200" and body["payload"] == PAYLOAD


def test_versions_name_every_library():
    v = cache_mod.versions()
    assert set(v) == {"eqiforge", "eqiforge_core", "torch", "triton", "python"}
    assert v["eqiforge_core"] != "unknown"  # a fingerprint of the compiled core
