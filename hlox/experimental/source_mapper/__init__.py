"""Source maps of the code hlox generates for a function (JAX's
``jax.experimental.source_mapper``): for each pass (``jaxpr``, ``hlo:stable-hlo``,
``hlo:original``, ``hlo:optimized``), the generated text and a TC39 source map from its
lines back to the user's source lines.

``sourcemap.py`` is the format; ``common.py`` the pass registry; ``jaxpr.py``, ``hlo.py``
(with ``mlir.py``, the MLIR location parser) the passes; ``generate_map.py`` runs them.
"""
from hlox.experimental.source_mapper.sourcemap import MappingsGenerator, SourceMap  # noqa: F401
from hlox.experimental.source_mapper.common import (  # noqa: F401
    Pass, SourceMapDump, all_passes, compile_with_env, filter_passes, register_pass)
from hlox.experimental.source_mapper.generate_map import generate_sourcemaps  # noqa: F401
from hlox.experimental.source_mapper.mlir import create_mlir_sourcemap  # noqa: F401
from hlox.experimental.source_mapper.jaxpr import canonicalize_filename  # noqa: F401
from hlox.experimental.source_mapper import hlo  # noqa: F401  (registers the HLO passes)

__all__ = ["MappingsGenerator", "Pass", "SourceMap", "SourceMapDump", "all_passes",
           "canonicalize_filename", "compile_with_env", "create_mlir_sourcemap",
           "filter_passes", "generate_sourcemaps", "hlo", "register_pass"]
