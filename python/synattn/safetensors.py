"""safetensors files in pure Python, byte for byte as synattn's C++ writes them.

The format: an 8-byte little-endian header length, a JSON header (tensor
name -> dtype, shape, data_offsets; "__metadata__" -> string map), padded
with spaces to a multiple of 8, then the raw little-endian data. synattn's
writer (io/safetensors.hpp) sorts the header's keys (nlohmann::json's
object), dumps it compactly, and lays the tensors out in name order (larger
items first, so each starts aligned); this module does the same, so a file
it writes is the file the C++ `save_weights` writes for the same values,
and the C++ `load_weights` reads it with all its checks (names, shapes,
dtype, finite values).

Writing follows the library's output-path policy (synattn/_output.py, as
io/output_path.hpp): a new path or a regular file is replaced atomically, a
symlink's file is replaced and the link kept, a FIFO or character device is
written directly, "-" is standard output, a directory is refused. Reading
refuses what the C++ reader refuses: a field that appears twice (a tensor
name, a tensor's 'shape', __metadata__'s 'step'), a number in the header
that is not a non-negative integer (2.7, true, -1), offsets outside the data.

A checkpoint of synattn's format (train/checkpoint.hpp) carries the metadata
format = "synattn.checkpoint.v1", dtype, step and optimizer; (1, k)
parameters are stored with shape [k], as PyTorch keeps them.
"""
import json
import math
import struct

import numpy as np

from ._output import write_file_atomically

__all__ = ["save_file", "load_file", "save_checkpoint", "load_checkpoint", "CHECKPOINT_FORMAT"]

CHECKPOINT_FORMAT = "synattn.checkpoint.v1"

_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U8": np.dtype("u1"), "BOOL": np.dtype("?"),
}
_RESERVED = ("format", "dtype", "step", "optimizer")


def _name_of(dtype):
    for name, dt in _DTYPES.items():
        if dt == dtype:
            return name
    return None


def _as_numpy(value, name):
    if hasattr(value, "detach"):  # a torch tensor: its CPU copy (a view when it is on the CPU already)
        value = value.detach().cpu().numpy()
    a = np.asarray(value)
    dt = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
    if _name_of(dt) is None:
        raise TypeError(f"safetensors: tensor '{name}' has dtype {a.dtype}, which the format has no name for")
    return np.ascontiguousarray(a, dtype=dt)


def save_file(path, tensors, metadata=None):
    """Writes {name: array or tensor} with optional {str: str} metadata to `path`."""
    arrays = {}
    for name, value in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"safetensors: tensor names are strings, got {name!r}")
        if name == "__metadata__":
            raise ValueError("safetensors: a tensor may not be called '__metadata__'")
        arrays[name] = _as_numpy(value, name)
    order = sorted(arrays, key=lambda n: n)  # the C++ writer's std::map order
    order.sort(key=lambda n: -arrays[n].dtype.itemsize)  # then larger items first (a stable sort)
    header = {}
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("safetensors: metadata keys and values are strings")
        header["__metadata__"] = dict(metadata)
    offset = 0
    for name in order:
        a = arrays[name]
        header[name] = {"dtype": _name_of(a.dtype), "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    pieces = [struct.pack("<Q", len(text)), text]
    pieces += [arrays[name].reshape(-1).view(np.uint8) for name in order]  # the data, not a copy of it
    write_file_atomically(path, pieces, "safetensors.save_file")


class _Object(dict):
    """A JSON object that remembers the keys it saw twice (json.loads keeps the last in silence)."""
    duplicates = ()


def _object_of(pairs):
    obj = _Object()
    seen_twice = []
    for key, value in pairs:
        if key in obj and key not in seen_twice:
            seen_twice.append(key)
        obj[key] = value
    obj.duplicates = seen_twice
    return obj


def _refuse_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def _header_integer(value, path, what, limit=None):
    """`value` as a non-negative integer no larger than `limit`: a JSON integer, never 2.7, 2.0, true or -1."""
    if type(value) is not int or value < 0:
        raise ValueError(f"{path}: {what} is {json.dumps(value)}, expected a non-negative integer")
    if limit is not None and value > limit:
        raise ValueError(f"{path}: {what} is {value}, more than the {limit} the file allows")
    return value


def load_file(path):
    """(tensors {name: numpy array}, metadata {str: str}) of the file at `path`."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise ValueError(f"{path}: header length {n} runs past the end of the file ({len(data)} bytes)")
    if n == 0 or data[8:9] != b"{":
        raise ValueError(f"{path}: header does not start with '{{'")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"), object_pairs_hook=_object_of,
                            parse_constant=_refuse_constant)
    except (UnicodeDecodeError, ValueError) as e:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"{path}: the header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path}: the header is not a JSON object")
    for name in header.duplicates:
        what = "'__metadata__'" if name == "__metadata__" else f"tensor '{name}'"
        raise ValueError(f"{path}: {what} appears twice in the header")
    metadata = header.pop("__metadata__", _Object())
    if not isinstance(metadata, dict):
        raise ValueError(f"{path}: __metadata__ is not an object of strings")
    for key in metadata.duplicates:
        raise ValueError(f"{path}: __metadata__ '{key}' appears twice in the header")
    for key, value in metadata.items():
        if not isinstance(value, str):
            raise ValueError(f"{path}: __metadata__ entry '{key}' is {json.dumps(value)}, expected a string")
    base = 8 + n
    data_size = len(data) - base
    tensors = {}
    for name, entry in header.items():
        what = f"tensor '{name}'"
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: {what}: entry is {json.dumps(entry)}, expected an object")
        for field in entry.duplicates:
            raise ValueError(f"{path}: {what}: field '{field}' appears twice in the header")
        for field in entry:
            if field not in ("dtype", "shape", "data_offsets"):
                raise ValueError(f"{path}: {what}: unexpected key '{field}' (expected dtype, shape, data_offsets)")
        for field in ("dtype", "shape", "data_offsets"):
            if field not in entry:
                raise ValueError(f"{path}: {what}: missing '{field}'")
        if not isinstance(entry["dtype"], str) or entry["dtype"] not in _DTYPES:
            raise ValueError(f"{path}: {what}: unknown dtype {json.dumps(entry['dtype'])}")
        dtype = _DTYPES[entry["dtype"]]
        if not isinstance(entry["shape"], list):
            raise ValueError(f"{path}: {what}: shape is {json.dumps(entry['shape'])}, expected an array")
        shape = tuple(_header_integer(s, path, f"{what}: shape entry {i}") for i, s in enumerate(entry["shape"]))
        offsets = entry["data_offsets"]
        if not isinstance(offsets, list) or len(offsets) != 2:
            raise ValueError(f"{path}: {what}: data_offsets is {json.dumps(offsets)}, expected [begin, end]")
        begin = _header_integer(offsets[0], path, f"{what}: data_offsets begin", data_size)
        end = _header_integer(offsets[1], path, f"{what}: data_offsets end", data_size)
        need = math.prod(shape) * dtype.itemsize  # Python integers: no overflow to hide a huge shape
        if end < begin or end - begin != need:
            raise ValueError(f"{path}: {what}: data_offsets [{begin}, {end}] do not fit "
                             f"dtype {entry['dtype']} x shape {list(shape)} ({need} bytes)")
        tensors[name] = np.frombuffer(data, dtype=dtype, count=math.prod(shape), offset=base + begin).reshape(shape).copy()
    return tensors, dict(metadata)


def save_checkpoint(path, tensors, step=0, extra=None):
    """A weights-only checkpoint in synattn's format (what C++ save_weights writes): all tensors share one float dtype."""
    arrays = {k: _as_numpy(v, k) for k, v in tensors.items()}
    dtypes = {a.dtype for a in arrays.values()}
    if len(dtypes) != 1 or next(iter(dtypes)) not in (np.dtype("<f4"), np.dtype("<f8")):
        raise TypeError(f"save_checkpoint: every tensor must be float32, or every one float64; got {sorted(map(str, dtypes))}")
    for name, a in arrays.items():
        if name.startswith("optimizer."):
            raise ValueError(f"save_checkpoint: parameter name '{name}' is reserved (optimizer.* holds optimiser state)")
        bad = ~np.isfinite(a)
        if bad.any():
            raise ValueError(f"save_checkpoint: parameter '{name}' has a non-finite value at flat index {int(np.argmax(bad.ravel()))}")
    metadata = {}
    for k, v in (extra or {}).items():
        if k in _RESERVED or k.startswith("optimizer."):
            raise ValueError(f"save_checkpoint: extra metadata key '{k}' is reserved (format, dtype, step, optimizer, optimizer.*)")
        metadata[k] = v
    metadata.update(format=CHECKPOINT_FORMAT, dtype=_name_of(next(iter(dtypes))), step=str(int(step)), optimizer="none")
    save_file(path, arrays, metadata)


def load_checkpoint(path):
    """(tensors, metadata) of a checkpoint; optimiser state tensors are left out."""
    tensors, metadata = load_file(path)
    return {k: v for k, v in tensors.items() if not k.startswith("optimizer.")}, metadata
