"""The HLO passes: ``hlo:stable-hlo`` (the lowered StableHLO with its locations),
``hlo:original`` (XLA's HLO before optimization) and ``hlo:optimized`` (after), each
mapped to the user's lines through the locations or the HLO's metadata."""
from __future__ import annotations

import enum
import re

from hlox import api
from hlox.experimental.source_mapper.common import Pass, SourceMapDump, register_pass
from hlox.experimental.source_mapper.mlir import create_mlir_sourcemap
from hlox.experimental.source_mapper.sourcemap import MappingsGenerator, SourceMap


class HloPass(enum.Enum):
  STABLE_HLO = "hlo:stable-hlo"
  ORIGINAL = "hlo:original"
  OPTIMIZED = "hlo:optimized"


_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
# Older HLO text names the file and line in each instruction's metadata.
_INLINE = re.compile(r'metadata=\{.*source_file="(?P<file>[^"]*)" source_line=(?P<line>\d+)')


def _fields(text: str) -> dict:
  return {k: int(v) for k, v in (part.split("=") for part in text.split() if "=" in part)}


def _indent(line: str) -> int:
  return len(line) - len(line.lstrip())


def _parse_hlo_new_format(lines) -> SourceMap:
  """The source map of HLO text whose metadata names stack frames (``stack_frame_id=N``),
  resolved through its FileNames, FileLocations and StackFrames tables."""
  files, locations, frames, section = {}, {}, {}, None
  for raw in lines:
    line = raw.strip()
    if line in _SECTIONS:
      section = line
      continue
    m = re.match(r"(\d+)\s+(.*)", line)
    if not m or section is None:
      continue
    key, rest = int(m[1]), m[2]
    if section == "FileNames":
      files[key] = rest.strip('"')
    elif section == "FileLocations":
      locations[key] = _fields(rest.strip("{}"))
    elif section == "StackFrames":
      frames[key] = _fields(rest.strip("{}"))
  sources, mappings = [], MappingsGenerator()
  for line in lines:
    mappings.new_group()
    m = re.search(r"stack_frame_id=(\d+)", line) if "metadata={" in line else None
    if m is None:
      continue
    frame = frames.get(int(m[1]))
    if frame is None:
      raise ValueError(f"HLO text names stack frame {m[1]}, which it does not define")
    loc = locations.get(frame["file_location_id"])
    if loc is None:
      raise ValueError(f"HLO text names file location {frame['file_location_id']}, which it "
                       "does not define")
    file = files.get(loc["file_name_id"])
    if file is None:
      continue
    if file not in sources:
      sources.append(file)
    mappings.new_segment(_indent(line), sources.index(file), loc["line"] - 1, 0)
  mappings.new_group()
  return SourceMap(3, sources, [], [], mappings.mappings())


def _parse_hlo_inline_format(lines) -> SourceMap:
  sources, mappings = [], MappingsGenerator()
  for line in lines:
    mappings.new_group()
    m = _INLINE.search(line)
    if m is None:
      continue
    if m["file"] not in sources:
      sources.append(m["file"])
    mappings.new_segment(_indent(line), sources.index(m["file"]), int(m["line"]) - 1, 0)
  mappings.new_group()
  return SourceMap(3, sources, [], [], mappings.mappings())


def parse_hlo_dump(text: str) -> SourceMap:
  """The source map of an HLO module's text (either way of naming source positions)."""
  lines = text.split("\n")
  return (_parse_hlo_new_format if "FileNames" in text else _parse_hlo_inline_format)(lines)


def _lower(work_dir, f, args, kwargs, **_):
  return api.jit(lambda *a: f(*a, **kwargs)).lower(*args), work_dir


def _stablehlo_dump(result, **_) -> SourceMapDump:
  text = result[0].as_text(debug_info=True)
  return SourceMapDump(create_mlir_sourcemap(text), text, HloPass.STABLE_HLO.value)


def _original_dump(result, **_) -> SourceMapDump:
  text = result[0].as_text(dialect="hlo", debug_info=True)
  return SourceMapDump(parse_hlo_dump(text), text, HloPass.ORIGINAL.value)


def _optimized_dump(result, xla_compiler_flags=None, **_) -> SourceMapDump:
  lowered, work_dir = result
  text = lowered.compile({"xla_dump_to": work_dir, **(xla_compiler_flags or {})}).as_text()
  return SourceMapDump(parse_hlo_dump(text), text, HloPass.OPTIMIZED.value)


for _pass, _dump in ((HloPass.STABLE_HLO, _stablehlo_dump), (HloPass.ORIGINAL, _original_dump),
                     (HloPass.OPTIMIZED, _optimized_dump)):
  register_pass(Pass(name=_pass.value, compile_fn=_lower, generate_dump=_dump))
