#!/usr/bin/python3
"""Writes tests/golden/safetensors/python_written.safetensors with nothing but
json + numpy, following the safetensors format description (8-byte LE header
length, JSON header, raw little-endian C-order data), independently of
synattn's writer. tests/train/test_safetensors.cpp recomputes the values from
the formulas below and checks the load.

    /usr/bin/python3 tools/make_safetensors_reference.py tests/golden/safetensors/python_written.safetensors
"""
import json
import struct
import sys

import numpy as np

tensors = {
    # Data order in the file differs from name order on purpose.
    "layers.0.attention.Wq": (np.arange(6, dtype="<f8").reshape(2, 3) * 0.25 - 0.5),  # F64 [2, 3]
    "bias.table": np.array([1.5, -2.0, 0.125], dtype="<f4"),  # F32 [3]
    "layers.0.attention.scale": np.array(0.75, dtype="<f8"),  # F64 [] (a scalar)
    "token_ids": np.arange(4, dtype="<i8") * 7 - 3,  # I64 [4]
}
DTYPES = {"<f8": "F64", "<f4": "F32", "<i8": "I64"}

header = {"__metadata__": {"made_by": "tools/make_safetensors_reference.py"}}
data = b""
for name, array in tensors.items():
    raw = np.ascontiguousarray(array).tobytes()
    header[name] = {
        "dtype": DTYPES[array.dtype.str],
        "shape": list(array.shape),
        "data_offsets": [len(data), len(data) + len(raw)],
    }
    data += raw
text = json.dumps(header, separators=(",", ":")).encode("utf-8")
text += b" " * ((8 - len(text) % 8) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + data)
