#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/).

Each seed is a mode byte (see the target's comment) followed by a small
valid file, so the fuzzer starts from inputs that get past the headers.
Run from anywhere; it rewrites the seeds-* files only (crash reproducers
and other files in the corpus directories are left alone)."""
import gzip
import os
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def idx(code, dims, payload):
    return bytes([0, 0, code, len(dims)]) + b"".join(
        struct.pack(">I", d) for d in dims) + payload


def gz(data):
    return gzip.compress(data, compresslevel=6, mtime=0)


def put(target, name, data):
    with open(os.path.join(HERE, target, "seeds-" + name), "wb") as f:
        f.write(data)


def main():
    images = idx(0x08, [2, 2, 3], bytes(range(12)))
    labels = idx(0x08, [2], bytes([3, 9]))
    split = struct.pack("<H", len(images))
    put("idx", "raw-ubyte", b"\x00" + images)
    put("idx", "pair-raw", b"\x02" + split + images + labels)
    put("idx", "pair-gz", b"\x07" + split + images + labels)
    put("idx", "wrap-float", b"\x01" + idx(0x0D, [2, 2],
                                             struct.pack(">4f", 1, -2, .5, 3)))
    put("idx", "gz-short", b"\x00" + gz(idx(0x0B, [3], struct.pack(">3h", -1, 2, 300))))
    put("idx", "raw-double", b"\x00" + idx(0x0E, [1, 2], struct.pack(">2d", 1.5, -4)))
    put("idx", "raw-int-sbyte", b"\x02" + struct.pack("<H", 16) +
        idx(0x0C, [1, 2], struct.pack(">2i", -7, 70000)) + idx(0x09, [1], b"\xff"))

    put("csv", "header", b"\x01" + b"a,b\n1,2.5\n3,4\n")
    put("csv", "quoted", b"\x40" + b'1,"x,""y""\nz",true,200\r\n-3,,0,7\n')
    put("csv", "all-columns", b"\x81" + b'p,q\n1,2\n"3",4\r\n\n5,6')
    put("csv", "own-columns", b"\xc0" + b"a:int64,skip,b:bool\n5,x,true\n6,y,0\n")
    put("csv", "skip-policies", b"\x1d" + b"a;b\n1;\n;2\nbad;3\n4;5\n")
    put("csv", "tabs-defaults", b"\x26" + b"1\t\t1\t9\n\t2\tfalse\t255\n")

    put("fixed", "uint8-int32", b"\x00" + bytes(range(6)) + struct.pack("<i", -1) +
        bytes(range(6, 12)) + struct.pack("<i", 5))
    put("fixed", "big-partial", b"\x17" + b"H" + struct.pack(">5e", 1, 2, 3, 4, .5) +
        struct.pack(">d", 2.5) + b"\x80" + b"tail")
    put("fixed", "padded", b"\x08" + b"\x01\x00\x3f\x80\x3f\x00pad" * 2)
    put("fixed", "own-fields", b"\x0c" + b"v:int32:2x2,w:uint8\n" +
        struct.pack("<4iB", 1, 2, 3, 4, 5))


if __name__ == "__main__":
    main()
