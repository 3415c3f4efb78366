"""The op functions under their registered names (weft.raw_ops.MatMul;
a vendor domain's '.' becomes '_': acme_Gelu). Filled by
weft/__init__.py."""
