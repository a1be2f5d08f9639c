"""``generate_sourcemaps``: run passes on a function and collect their source maps."""
from __future__ import annotations

import os
import tempfile
from typing import Sequence

from hlox.experimental.source_mapper.common import Pass, SourceMapDump


def generate_sourcemaps(f, passes: Sequence[Pass], **pass_kwargs):
  """``generate_sourcemaps(f, passes)(*args, **kwargs)``: one ``SourceMapDump`` per pass,
  in order. Each pass gets a scratch directory of its own; ``pass_kwargs`` go to every
  pass."""
  def run(*args, **kwargs) -> list[SourceMapDump]:
    dumps, results = [], {}
    with tempfile.TemporaryDirectory() as work_dir:
      for p in passes:
        if p.compile_fn not in results:
          pass_dir = os.path.join(work_dir, p.name.replace(":", "__"))
          os.makedirs(pass_dir)
          results[p.compile_fn] = p.compile_fn(pass_dir, f, args, kwargs, **pass_kwargs)
        dumps.append(p.generate_dump(results[p.compile_fn], **pass_kwargs))
    return dumps
  return run
