"""One function per registered op, made at import from the runtime's
registry (weft.load_plugin adds the functions of a plugin's ops). Names
are snake_case ("MatMul" -> mat_mul, "acme.Gelu" -> acme_gelu); the
registered names are in weft.raw_ops. This module is filled by
weft/__init__.py."""
