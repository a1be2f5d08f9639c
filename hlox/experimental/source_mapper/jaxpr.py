"""The ``jaxpr`` pass: the printed jaxpr, each equation mapped to the user's line."""
from __future__ import annotations

import re

from hlox import api
from hlox.config import config
from hlox.core.jaxpr import pp_jaxpr_with_positions
from hlox.experimental.source_mapper.common import Pass, SourceMapDump, register_pass
from hlox.experimental.source_mapper.sourcemap import MappingsGenerator, SourceMap


def canonicalize_filename(file_name: str) -> str:
  """``file_name`` as the lowering names files: with what the option
  ``hlo_source_file_canonicalization_regex`` matches removed, where hlox has that option
  (it has not yet: names are kept whole)."""
  try:
    pattern = config.read("hlo_source_file_canonicalization_regex")
  except AttributeError:
    pattern = None
  return re.sub(pattern, "", file_name) if pattern else file_name


def _trace(work_dir, f, args, kwargs, **_):
  return api.make_jaxpr(f)(*args, **kwargs)


def _dump(closed, **_) -> SourceMapDump:
  text, positions = pp_jaxpr_with_positions(closed.jaxpr)
  by_line: dict = {}
  for line, start, _end, eqn in positions:
    by_line.setdefault(line, []).append((start, eqn.source_info))
  sources, mappings = [], MappingsGenerator()
  for i in range(text.count("\n") + 1):
    mappings.new_group()
    for start, info in by_line.get(i, ()):
      if info is None or info.file is None:
        continue
      name = canonicalize_filename(info.file)
      if name not in sources:
        sources.append(name)
      mappings.new_segment(start, sources.index(name), info.line - 1, info.column or 0)
  mappings.new_group()
  return SourceMapDump(SourceMap(3, sources, [], [], mappings.mappings()), text, "jaxpr")


register_pass(Pass(name="jaxpr", compile_fn=_trace, generate_dump=_dump))
