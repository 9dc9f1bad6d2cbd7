"""synattn.safetensors against hostile paths and headers: writing follows the library's output-path policy
(io/output_path.hpp: a regular file replaced atomically, a symlink's file replaced and the link kept, a FIFO or
a character device written directly, a directory refused, nothing partial left), and reading refuses
duplicate fields and numbers that are not non-negative integers, naming the file and the field."""
import json
import os
import signal
import stat
import struct
import subprocess
import sys
import threading

import numpy as np
import pytest

from synattn import _output
from synattn import safetensors as sft

TENSORS = {"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1.5, -2.0])}


def file_bytes(tensors=TENSORS, metadata=None, tmp=None):
    """What save_file writes for `tensors` to a regular file."""
    path = os.path.join(tmp, "reference.safetensors")
    sft.save_file(path, tensors, metadata)
    with open(path, "rb") as f:
        return f.read()


def leftovers(folder):
    return sorted(n for n in os.listdir(folder) if ".tmp." in n)


# --- writing ---------------------------------------------------------------

def test_a_regular_file_is_replaced_by_a_new_file_not_rewritten_in_place(tmp_path):
    path = tmp_path / "m.safetensors"
    path.write_bytes(b"old contents")
    with open(path, "rb") as reader:  # a reader of the old file keeps reading the old file
        before = os.stat(path).st_ino
        sft.save_file(path, TENSORS, {"k": "v"})
        assert reader.read() == b"old contents"
    assert os.stat(path).st_ino != before
    tensors, metadata = sft.load_file(path)
    assert metadata == {"k": "v"} and np.array_equal(tensors["w"], TENSORS["w"])
    assert leftovers(tmp_path) == []


def test_a_character_device_is_written_to_and_stays_a_device(tmp_path):
    sft.save_file("/dev/null", TENSORS)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert leftovers("/dev") == []


def test_a_fifo_is_written_to_directly_never_renamed_over(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    reader.start()
    sft.save_file(fifo, TENSORS)
    reader.join(timeout=30)
    assert not reader.is_alive()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got == [file_bytes(tmp=tmp_path)]  # the reader got the whole file
    assert leftovers(tmp_path) == []


def test_a_symlink_is_followed_its_file_replaced_and_the_link_kept(tmp_path):
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "m.safetensors"
    target.write_bytes(b"old")
    link = tmp_path / "link.safetensors"
    os.symlink("real/m.safetensors", link)
    sft.save_file(link, TENSORS)
    assert os.path.islink(link) and os.readlink(link) == "real/m.safetensors"
    assert target.read_bytes() == file_bytes(tmp=tmp_path)
    assert leftovers(tmp_path) == [] and leftovers(tmp_path / "real") == []


def test_a_symlink_to_nothing_and_a_loop_are_refused(tmp_path):
    dangling = tmp_path / "dangling"
    os.symlink("nowhere/m.safetensors", dangling)
    with pytest.raises(RuntimeError, match=r"cannot write '.*dangling': it is a symlink to '.*nowhere/m.safetensors', "
                                           r"which does not exist"):
        sft.save_file(dangling, TENSORS)
    os.symlink("a", tmp_path / "b")
    os.symlink("b", tmp_path / "a")
    with pytest.raises(RuntimeError, match="too many levels of symlinks"):
        sft.save_file(tmp_path / "a", TENSORS)
    assert sorted(os.listdir(tmp_path)) == ["a", "b", "dangling"]


def test_a_directory_is_refused_and_left_as_it_was(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    with pytest.raises(RuntimeError, match=r"safetensors.save_file: cannot write '.*d': it is a directory"):
        sft.save_file(folder, TENSORS)
    assert folder.is_dir() and os.listdir(folder) == [] and leftovers(tmp_path) == []
    with pytest.raises(RuntimeError, match="its folder '.*missing' cannot be used"):
        sft.save_file(tmp_path / "missing" / "m.safetensors", TENSORS)
    with pytest.raises(RuntimeError, match="an empty path"):
        sft.save_file("", TENSORS)


def test_dash_is_standard_output(tmp_path, capfdbinary):
    sft.save_file("-", TENSORS)
    assert capfdbinary.readouterr().out == file_bytes(tmp=tmp_path)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root writes into a read-only folder; test_a_failed_write_* covers a refusal mid-write")
def test_a_read_only_folder_is_refused_and_the_old_file_kept(tmp_path):
    path = tmp_path / "m.safetensors"
    path.write_bytes(b"old")
    os.chmod(tmp_path, 0o555)
    try:
        with pytest.raises(RuntimeError, match="cannot create a temporary file beside it"):
            sft.save_file(path, TENSORS)
    finally:
        os.chmod(tmp_path, 0o755)
    assert path.read_bytes() == b"old" and leftovers(tmp_path) == []


def test_a_failed_write_leaves_the_old_file_whole_and_no_temporary_file(tmp_path):
    # A file-size limit below the file's size: the write fails part way, as on a full disk. Writing in place
    # truncated the old file first and left a partial file behind.
    path = tmp_path / "m.safetensors"
    path.write_bytes(b"old")
    script = ("import resource, signal, sys, numpy as np\n"
              "from synattn import safetensors as sft\n"
              "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
              "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))\n"
              "try:\n"
              "    sft.save_file(sys.argv[1], {'big': np.ones(100000, np.float32)})\n"
              "except RuntimeError as e:\n"
              "    print(e)\n"
              "    sys.exit(3)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "cannot write" in r.stdout and "writing failed: File too large" in r.stdout
    assert path.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_an_interrupted_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / "m.safetensors"
    path.write_bytes(b"old")

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sft.save_file(path, TENSORS)
    monkeypatch.undo()
    assert path.read_bytes() == b"old" and leftovers(tmp_path) == []


def test_resolve_output_path_classifies_without_writing(tmp_path):
    assert _output.resolve_output_path("-", "w") == (_output.STANDARD_OUTPUT, "-")
    assert _output.resolve_output_path("/dev/null", "w") == (_output.STREAM, "/dev/null")
    assert _output.resolve_output_path("/dev/stdout", "w") == (_output.STREAM, "/dev/stdout")
    assert _output.resolve_output_path(str(tmp_path / "new"), "w") == (_output.NEW_FILE, str(tmp_path / "new"))
    (tmp_path / "f").write_bytes(b"")
    os.symlink("f", tmp_path / "l")
    assert _output.resolve_output_path(str(tmp_path / "l"), "w") == (_output.REGULAR_FILE, str(tmp_path) + "/f")
    assert sorted(os.listdir(tmp_path)) == ["f", "l"]


# --- reading ---------------------------------------------------------------

def raw_file(tmp_path, header_text, data=b"\0" * 24, name="hostile.safetensors"):
    """A file of `header_text` (padded to 8) and `data`, exactly as given: json.dumps cannot write duplicates."""
    text = header_text.encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    path = tmp_path / name
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return str(path)


def test_a_well_formed_hand_written_header_loads(tmp_path):
    path = raw_file(tmp_path, '{"__metadata__":{"step":"3"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}}')
    tensors, metadata = sft.load_file(path)
    assert tensors["a"].shape == (2, 3) and metadata == {"step": "3"}


@pytest.mark.parametrize("header, field", [
    ('{"a":{"dtype":"F32","shape":[6],"data_offsets":[0,24]},"a":{"dtype":"F32","shape":[6],"data_offsets":[0,24]}}',
     "tensor 'a' appears twice"),
    ('{"a":{"dtype":"F32","shape":[2,3],"shape":[6],"data_offsets":[0,24]}}', "tensor 'a': field 'shape' appears twice"),
    ('{"a":{"dtype":"F32","shape":[6],"data_offsets":[0,24],"dtype":"I32"}}', "tensor 'a': field 'dtype' appears twice"),
    ('{"__metadata__":{"step":"1","step":"2"},"a":{"dtype":"F32","shape":[6],"data_offsets":[0,24]}}',
     "__metadata__ 'step' appears twice"),
    ('{"__metadata__":{},"__metadata__":{},"a":{"dtype":"F32","shape":[6],"data_offsets":[0,24]}}',
     "'__metadata__' appears twice"),
])
def test_a_field_that_appears_twice_is_refused_by_name(tmp_path, header, field):
    # json.loads keeps the last of two equal keys: the second 'shape' or 'step' won in silence.
    path = raw_file(tmp_path, header)
    with pytest.raises(ValueError, match="hostile.safetensors: " + field + " in the header"):
        sft.load_file(path)


@pytest.mark.parametrize("shape, offsets, field", [
    ("[2.7]", "[0,24]", "shape entry 0 is 2.7"),
    ("[6.0]", "[0,24]", "shape entry 0 is 6.0"),
    ("[true]", "[0,24]", "shape entry 0 is true"),
    ("[-6]", "[0,24]", "shape entry 0 is -6"),
    ('["6"]', "[0,24]", 'shape entry 0 is "6"'),
    ("[6]", "[0,24.0]", "data_offsets end is 24.0"),
    ("[6]", "[false,24]", "data_offsets begin is false"),
    ("[6]", "[-0,24]", None),  # -0 is the integer 0 in JSON: accepted
    ("[6]", "[0,99999999999999999999999]", "data_offsets end is 99999999999999999999999, more than the 24"),
    ("[6]", "[8,32]", "data_offsets end is 32, more than the 24"),
    ("[3,1e400]", "[0,24]", "shape entry 1 is Infinity"),
    ("[NaN]", "[0,24]", "not valid JSON"),
    ("[6]", "[0,24,24]", "data_offsets is \\[0, 24, 24\\], expected \\[begin, end\\]"),
    ("[4611686018427387904,4]", "[0,24]", "do not fit"),  # a shape whose byte count overflows 64 bits
])
def test_header_numbers_are_non_negative_integers_in_range(tmp_path, shape, offsets, field):
    path = raw_file(tmp_path, '{"t":{"dtype":"F32","shape":%s,"data_offsets":%s}}' % (shape, offsets))
    if field is None:
        assert sft.load_file(path)[0]["t"].shape == (6,)
        return
    with pytest.raises(ValueError, match="hostile.safetensors: .*" + field):
        sft.load_file(path)


def test_metadata_values_are_strings_and_entries_complete(tmp_path):
    path = raw_file(tmp_path, '{"__metadata__":{"step":3},"a":{"dtype":"F32","shape":[6],"data_offsets":[0,24]}}')
    with pytest.raises(ValueError, match="__metadata__ entry 'step' is 3, expected a string"):
        sft.load_file(path)
    path = raw_file(tmp_path, '{"a":{"dtype":"F32","shape":[6]}}')
    with pytest.raises(ValueError, match="tensor 'a': missing 'data_offsets'"):
        sft.load_file(path)
    path = raw_file(tmp_path, '{"a":{"dtype":"F32","shape":[6],"data_offsets":[0,24],"extra":1}}')
    with pytest.raises(ValueError, match="tensor 'a': unexpected key 'extra'"):
        sft.load_file(path)
