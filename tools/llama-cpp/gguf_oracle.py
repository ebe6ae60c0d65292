#!/usr/bin/env python3
"""gguf_oracle.py GGUF_PY_DIR OUT.gguf — llama.cpp's own Python GGUF code
(gguf-py from the release the npm package ships) writes a small GGUF file of
every metadata value type, a custom alignment, and tensors of several ggml
types (quantised by gguf-py where it can, raw blocks otherwise); then its
GGUFReader reads the file back and this prints what it read as JSON on
stdout. tests/gguf_test.cpp compares the engine's reader with that.
"""
import json
import sys

import numpy as np

sys.path.insert(0, sys.argv[1])
import gguf  # noqa: E402  (llama.cpp's gguf-py)
from gguf import GGMLQuantizationType as Q  # noqa: E402

out = sys.argv[2]
rng = np.random.default_rng(3)

w = gguf.GGUFWriter(out, "qwen3moe")
w.add_custom_alignment(64)
w.add_uint8("t.u8", 200)
w.add_int8("t.i8", -100)
w.add_uint16("t.u16", 60000)
w.add_int16("t.i16", -30000)
w.add_uint32("t.u32", 4000000000)
w.add_int32("t.i32", -2000000000)
w.add_float32("t.f32", 0.15625)
w.add_bool("t.bool", True)
w.add_string("t.string", "héllo <|im_end|>")
w.add_uint64("t.u64", 1 << 40)
w.add_int64("t.i64", -(1 << 40))
w.add_float64("t.f64", -2.5e-300)
w.add_array("t.strings", ["a", "", "ŝ"])
w.add_array("t.ints", [1, -2, 3])
w.add_array("t.floats", [0.5, -0.25])
w.add_array("t.bools", [True, False])

rows = rng.standard_normal((4, 512)).astype(np.float32)
w.add_tensor("f32", rows)
w.add_tensor("f16", rows.astype(np.float16))
for name, qtype in (("bf16", Q.BF16), ("q8_0", Q.Q8_0), ("q4_0", Q.Q4_0), ("q5_1", Q.Q5_1), ("mxfp4", Q.MXFP4)):
    w.add_tensor(name, gguf.quants.quantize(rows, qtype), raw_dtype=qtype)  # its shape in bytes
# Types gguf-py cannot quantise: random blocks of the right size (3-D, as
# experts are stored).
for name, qtype in (("q4_K", Q.Q4_K), ("q6_K", Q.Q6_K), ("iq4_xs", Q.IQ4_XS), ("iq2_xxs", Q.IQ2_XXS)):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(3, 2, 512 // block * size), dtype=np.uint8)
    w.add_tensor(name, raw, raw_dtype=qtype)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

def plain(value):
    """numpy scalars and lists of them as JSON's numbers."""
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value.item() if hasattr(value, "item") else value


r = gguf.GGUFReader(out)
fields = {}
for name, field in r.fields.items():
    if name.startswith("GGUF."):
        continue  # the reader's own entries (version, counts)
    types = [t.name for t in field.types]
    fields[name] = {"types": types, "value": plain(field.contents())}
tensors = [{"name": t.name, "type": t.tensor_type.name, "shape": [int(d) for d in t.shape],
            "offset": int(t.data_offset), "bytes": int(t.n_bytes)} for t in r.tensors]
print(json.dumps({"alignment": int(r.alignment), "data_offset": int(r.data_offset), "fields": fields, "tensors": tensors}))
