"""weft dtypes as Python objects (weft.float32, ...), and conversion from
NumPy dtypes and names. The codes are those of weft/types.h."""

import numpy as _np


class DType:
    """An element type: .name, .code (wf_dtype), .size, .numpy (a NumPy
    dtype, or None for bfloat16 and resource)."""

    __slots__ = ("name", "code", "size", "numpy")

    def __init__(self, name, code, size, np_type):
        self.name = name
        self.code = code
        self.size = size
        self.numpy = _np.dtype(np_type) if np_type is not None else None

    def __repr__(self):
        return "weft." + self.name

    def __eq__(self, other):
        try:
            return as_dtype(other).code == self.code
        except (TypeError, ValueError):
            return NotImplemented

    def __hash__(self):
        return hash(self.code)

    @property
    def is_floating(self):
        return self.code in (1, 2, 3, 4)

    @property
    def is_integer(self):
        return self.code in (5, 6, 7, 8)


float32 = DType("float32", 1, 4, _np.float32)
float64 = DType("float64", 2, 8, _np.float64)
float16 = DType("float16", 3, 2, _np.float16)
bfloat16 = DType("bfloat16", 4, 2, None)
int8 = DType("int8", 5, 1, _np.int8)
uint8 = DType("uint8", 6, 1, _np.uint8)
int32 = DType("int32", 7, 4, _np.int32)
int64 = DType("int64", 8, 8, _np.int64)
bool_ = DType("bool", 9, 1, _np.bool_)
resource = DType("resource", 10, 8, None)
# Byte strings of any length; NumPy holds them as objects (str or bytes).
string = DType("string", 11, 0, None)

_BY_CODE = {d.code: d for d in (float32, float64, float16, bfloat16, int8,
                                uint8, int32, int64, bool_, resource, string)}
_BY_NAME = {d.name: d for d in _BY_CODE.values()}
_BY_NAME.update({"float": float32, "double": float64, "half": float16,
                 "f32": float32, "f64": float64, "bool_": bool_})


def as_dtype(x):
    """A DType from a DType, a code, a name ("float32"), a NumPy dtype or
    a Python type (float -> float32, int -> int32, bool -> bool)."""
    if isinstance(x, DType):
        return x
    if isinstance(x, bool):
        raise TypeError("weft: %r is not a dtype" % (x,))
    if isinstance(x, int):
        if x in _BY_CODE:
            return _BY_CODE[x]
        raise ValueError("weft: %d is not a dtype code" % x)
    if isinstance(x, str):
        if x in _BY_NAME:
            return _BY_NAME[x]
        raise ValueError("weft: unknown dtype name %r" % x)
    if x is float:
        return float32
    if x is int:
        return int32
    if x is bool:
        return bool_
    if x is str or x is bytes:
        return string
    try:
        nd = _np.dtype(x)
    except TypeError:
        raise TypeError("weft: %r is not a dtype" % (x,)) from None
    if nd.kind in "USO":
        return string
    for d in _BY_CODE.values():
        if d.numpy is not None and d.numpy == nd:
            return d
    raise ValueError("weft: NumPy dtype %s has no weft dtype" % nd)
