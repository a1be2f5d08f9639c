"""The passes a source map can be made for, and what one produces."""
from __future__ import annotations

import contextlib
import dataclasses
import re
from typing import Any, Callable, Sequence

from hlox import api
from hlox.config import config
from hlox.experimental.source_mapper.sourcemap import SourceMap


@dataclasses.dataclass(frozen=True)
class SourceMapDump:
  """The text a pass produced and its source map back to the user's files."""
  source_map: SourceMap
  generated_code: str
  pass_name: str


@dataclasses.dataclass(frozen=True)
class Pass:
  """A named pass: ``compile_fn(work_dir, f, args, kwargs, **options)`` makes what
  ``generate_dump(result, **options)`` turns into a ``SourceMapDump`` (passes sharing a
  ``compile_fn`` share its result)."""
  name: str
  compile_fn: Callable[..., Any]
  generate_dump: Callable[..., SourceMapDump]


_passes: dict = {}


def register_pass(pass_: Pass) -> None:
  if pass_.name in _passes:
    raise ValueError(f"Pass {pass_.name} already registered")
  _passes[pass_.name] = pass_


def all_passes() -> Sequence[Pass]:
  return list(_passes.values())


def filter_passes(regex: str) -> Sequence[Pass]:
  """The registered passes whose name matches ``regex`` (from its start)."""
  return [p for p in _passes.values() if re.match(regex, p.name)]


@contextlib.contextmanager
def _options(values: dict):
  old = {name: config.read(name) for name in values}
  try:
    for name, value in values.items():
      config.update(name, value)
    yield
  finally:
    for name, value in old.items():
      config.update(name, value)


def compile_with_env(f, f_args, f_kwargs, env_flags, compiler_flags):
  """Compile ``f`` for these arguments with configuration options ``env_flags`` set for the
  while and XLA options ``compiler_flags``."""
  with _options(env_flags):
    return api.jit(lambda *args, **kwargs: f(*args, **kwargs)).lower(
        *f_args, **f_kwargs).compile(compiler_flags)
