"""Source maps of MLIR text printed with its locations (``loc(#locN)`` on each operation,
``#locN = loc("file":line:col)`` definitions at the end, named and call-site locations
pointing at others)."""
from __future__ import annotations

import re

from hlox.experimental.source_mapper.sourcemap import MappingsGenerator, SourceMap

_USE = re.compile(r"loc\(#loc(\d+)\)")
_FILE = re.compile(r'#loc(\d+) = loc\("(.*)":(\d+):(\d+)(?: to \d*:\d+)?\)')
_NAMED = re.compile(r'#loc(\d+) = loc\(".*"\(#loc(\d+)\)\)')
_CALLSITE = re.compile(r"#loc(\d+) = loc\(callsite\(#loc(\d+) at #loc\d+\)\)")


def _locations(lines) -> dict:
  """``{id: (file, line, column)}`` for every location that leads to a file position (a
  named location to the one it wraps, a call site to its callee)."""
  direct, points_to = {}, {}
  for line in lines:
    if not line.startswith("#loc"):
      continue
    m = _FILE.match(line)
    if m:
      direct[int(m[1])] = (m[2], int(m[3]), int(m[4]))
      continue
    m = _NAMED.match(line) or _CALLSITE.match(line)
    if m:
      points_to[int(m[1])] = int(m[2])
  resolved = dict(direct)
  for loc in points_to:
    seen, target = set(), loc
    while target in points_to and target not in seen:
      seen.add(target)
      target = points_to[target]
    if target in direct:
      resolved[loc] = direct[target]
  return resolved


def create_mlir_sourcemap(mlir_dump: str) -> SourceMap:
  """The source map of ``mlir_dump``: each line using a location that resolves to a file
  maps (from its first non-blank column) to that position."""
  lines = mlir_dump.split("\n")
  where = _locations(lines)
  sources, mappings = [], MappingsGenerator()
  for line in lines:
    mappings.new_group()
    m = _USE.search(line)
    if m is None or int(m[1]) not in where:
      continue
    file, src_line, src_col = where[int(m[1])]
    if file not in sources:
      sources.append(file)
    mappings.new_segment(len(line) - len(line.lstrip()), sources.index(file), src_line - 1,
                         src_col)
  mappings.new_group()
  return SourceMap(3, sources, [""] * len(sources), [], mappings.mappings())
