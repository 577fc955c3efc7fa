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


PAYLOAD = {"program": "(tiled ...)", "source": "def forward(x): ...", "params": {"block_m0": 16},
           "report": {"program": "p"}}
NEW_PAYLOAD = {**PAYLOAD, "source": "def forward(x): return (x,)"}


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
    assert c.store(key(), NEW_PAYLOAD) == path
    assert load_quietly(c, key()).payload == NEW_PAYLOAD


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
        assert c.store(key(), NEW_PAYLOAD) is None
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


# ---- hostile files and concurrent processes ---------------------------------------------

import hashlib  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402


def load_corrupt(c: Cache, k, match="corrupt"):
    """load() of an entry that must be ignored: None and one CacheWarning, never an exception."""
    with pytest.warns(CacheWarning, match=match) as record:
        assert c.load(k) is None
    return str(record[0].message)


def write_body(path, key_, payload, fmt=1):
    """An entry file with a checksum that matches its content, whatever the layout."""
    canonical = json.dumps({"key": key_, "payload": payload}, sort_keys=True, separators=(",", ":"))
    body = {"format": fmt, "key": key_, "payload": payload,
            "checksum": hashlib.sha256(canonical.encode()).hexdigest()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body))


def test_deeply_nested_json_is_corrupt_not_a_crash(tmp_path):
    # json.loads raises RecursionError (not a JSONDecodeError) past ~1000 levels.
    c = Cache(tmp_path)
    path = c.path_for(key())
    path.parent.mkdir(parents=True)
    for text in ("[" * 100_000, '{"format": 1, "key": ' + "[" * 50_000 + "]" * 50_000 + "}"):
        path.write_text(text)
        assert "not valid JSON" in load_corrupt(c, key())
        assert isinstance(read_entry(path), str)


def test_every_truncation_and_random_bytes_are_ignored(tmp_path):
    c = Cache(tmp_path)
    path = c.store(key(), PAYLOAD)
    whole = path.read_bytes()
    rng = random.Random(0)
    damaged = [whole[:n] for n in sorted(rng.sample(range(len(whole)), 40)) + [0, len(whole) - 1]]
    damaged += [bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))) for _ in range(30)]
    # Random bytes spliced into the entry: still one file that parses or not, never trusted if changed.
    for _ in range(30):
        i = rng.randrange(len(whole))
        damaged.append(whole[:i] + bytes([rng.randrange(256)]) + whole[i + 1:])
    for data in damaged:
        if data == whole:
            continue
        path.write_bytes(data)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            entry = c.load(key())
        if entry is not None:
            # A byte change that leaves the same JSON value (whitespace, a digit's
            # case in an escape): the very entry that was stored, nothing else.
            assert entry.payload == PAYLOAD and entry.key == key() and not record
        else:
            assert [r.category for r in record] == [CacheWarning], data[:80]
    path.write_bytes(whole)
    assert load_quietly(c, key()).payload == PAYLOAD


GOOD_KEY = key()


@pytest.mark.parametrize(
    "key_, payload, reason",
    [
        ({**GOOD_KEY, "versions": ["0.1.0"]}, PAYLOAD, "'versions'"),
        ({**GOOD_KEY, "versions": {**VERSIONS, "torch": 2}}, PAYLOAD, "'versions'"),
        ({k: v for k, v in GOOD_KEY.items() if k != "gpu"}, PAYLOAD, "no 'gpu'"),
        ({**GOOD_KEY, "options": "h200"}, PAYLOAD, "'options'"),
        (GOOD_KEY, {k: v for k, v in PAYLOAD.items() if k != "source"}, "no 'source'"),
        (GOOD_KEY, {**PAYLOAD, "source": ["def forward"]}, "no 'source'"),
        (GOOD_KEY, {**PAYLOAD, "params": [16]}, "'params'"),
        (GOOD_KEY, {**PAYLOAD, "params": {"block_m0": "16"}}, "'params'"),
        (GOOD_KEY, {**PAYLOAD, "params": {"block_m0": 0}}, "'params'"),
        (GOOD_KEY, {**PAYLOAD, "params": {"block_m0": True}}, "'params'"),
        (GOOD_KEY, {k: v for k, v in PAYLOAD.items() if k != "report"}, "'report'"),
    ],
    ids=["versions-list", "version-number", "no-gpu", "options-text", "no-source", "source-list", "params-list",
         "param-text", "param-zero", "param-bool", "no-report"],
)
def test_entry_of_another_layout_with_a_valid_checksum_is_ignored(tmp_path, key_, payload, reason):
    # What another tool, a hand edit or a future eqiforge could leave in a slot:
    # the checksum holds, the layout does not.
    c = Cache(tmp_path)
    write_body(c.path_for(key()), key_, payload)
    message = load_corrupt(c, key())
    assert "not an entry as this eqiforge writes them" in message and reason in message
    assert isinstance(read_entry(c.path_for(key())), str)
    # The next store replaces it.
    c.store(key(), PAYLOAD)
    assert load_quietly(c, key()).payload == PAYLOAD


def test_entry_of_another_version_is_stale_whatever_its_payload(tmp_path):
    c = Cache(tmp_path)
    old = key(versions={**VERSIONS, "eqiforge": "0.0.9"})
    write_body(c.path_for(old), old, {"kernels": ["a layout of an older eqiforge"]})
    message = load_corrupt(c, key(), match="stale")
    assert "eqiforge 0.0.9 -> 0.1.0" in message


def test_entry_of_another_format_with_a_valid_checksum_is_ignored(tmp_path):
    c = Cache(tmp_path)
    write_body(c.path_for(key()), key(), PAYLOAD, fmt=2)
    assert "format 2" in load_corrupt(c, key())


def test_store_of_a_value_json_cannot_hold_warns_and_writes_nothing(tmp_path):
    c = Cache(tmp_path)
    with pytest.warns(CacheWarning, match="not JSON"):
        assert c.store(key(), {**PAYLOAD, "params": {"block_m0": object()}}) is None
    assert not list(tmp_path.rglob("*.json"))


def test_a_directory_in_the_slot_is_ignored_and_not_replaced(tmp_path):
    c = Cache(tmp_path)
    c.path_for(key()).mkdir(parents=True)
    assert "cannot be read" in load_corrupt(c, key())
    with pytest.warns(CacheWarning, match="could not write"):
        assert c.store(key(), PAYLOAD) is None
    assert not [p for p in c.path_for(key()).parent.iterdir() if p.name.startswith(".tmp-")]


_HAMMER = textwrap.dedent("""
    import json, sys, warnings
    from eqiforge.runtime.cache import Cache
    warnings.simplefilter("error")  # any CacheWarning (corrupt, stale) fails the worker
    directory, me, rounds, key, payloads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *json.loads(sys.argv[4])
    c = Cache(directory)
    seen = set()
    for i in range(rounds):
        if i % 2 == 0:
            assert c.store(key, payloads[me]) is not None
        entry = c.load(key)
        if entry is not None:
            assert entry.payload in payloads, entry.payload
            seen.add(payloads.index(entry.payload))
    print(json.dumps(sorted(seen)))
""")


def test_concurrent_processes_share_one_slot(tmp_path):
    # Four processes write and read the same entry at once: a reader sees a
    # whole entry of one of the writers (never half of one, never a warning),
    # and the slot ends as one valid entry, with no temporary file left.
    payloads = [{**PAYLOAD, "source": f"def forward(x): return (x * {i},)", "params": {"block_m0": 16 << i}}
                for i in range(4)]
    arg = json.dumps([key(), payloads])
    cache_dir, logs = tmp_path / "cache", tmp_path / "logs"
    logs.mkdir()
    procs = []
    for i in range(4):
        with open(logs / f"{i}.out", "w") as out, open(logs / f"{i}.err", "w") as err:
            procs.append(subprocess.Popen([sys.executable, "-c", _HAMMER, str(cache_dir), str(i), "300", arg],
                                          stdout=out, stderr=err))
    seen = set()
    for i, p in enumerate(procs):
        assert p.wait(timeout=120) == 0, (logs / f"{i}.err").read_text()[-2000:]
        seen.update(json.loads((logs / f"{i}.out").read_text()))
    assert len(seen) >= 2, "the workers never saw each other's entries: the test raced nothing"
    files = [p for p in cache_dir.rglob("*") if p.is_file()]
    assert files == [Cache(cache_dir).path_for(key())]
    entry = read_entry(files[0])
    assert not isinstance(entry, str) and entry.payload in payloads
