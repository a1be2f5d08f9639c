"""Source maps in the TC39 format (https://tc39.es/source-map): per line of generated text,
segments ``(column, source index, source line, source column[, name index])``, each value
relative to the same field of the previous segment (the column restarts on every line),
serialized as Base64 VLQs."""
from __future__ import annotations

import dataclasses
import json
from typing import Sequence

Segment = tuple
Mappings = Sequence[Sequence[Segment]]

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_DIGIT = {c: i for i, c in enumerate(_ALPHABET)}
_CONTINUE, _BITS = 0x20, 5


@dataclasses.dataclass(frozen=True)
class SourceMap:
  """A version-3 source map; ``mappings`` as decoded (relative) segments per line."""
  version: int
  sources: Sequence[str]
  sources_content: Sequence[str]
  names: Sequence[str]
  mappings: Mappings

  @classmethod
  def from_json(cls, text: str) -> "SourceMap":
    data = json.loads(text)
    return cls(version=data["version"], sources=data["sources"],
               sources_content=data.get("sourcesContent", []), names=data.get("names", []),
               mappings=deserialize_mappings(data["mappings"]))

  def to_json(self) -> str:
    return json.dumps({"version": self.version, "sources": list(self.sources),
                       "sourcesContent": list(self.sources_content),
                       "names": list(self.names),
                       "mappings": serialize_mappings(self.mappings)})


def encode_vlq(value: int) -> str:
  """One integer as Base64 VLQ digits: the sign in the lowest bit, five bits a digit, least
  significant first, a continuation bit on all but the last."""
  v = (-value << 1) | 1 if value < 0 else value << 1
  out = []
  while True:
    digit, v = v & 0x1F, v >> _BITS
    out.append(_ALPHABET[digit | (_CONTINUE if v else 0)])
    if not v:
      return "".join(out)


def _decode_vlqs(text: str) -> list:
  values, value, shift = [], 0, 0
  for ch in text:
    digit = _DIGIT[ch]
    value |= (digit & 0x1F) << shift
    if digit & _CONTINUE:
      shift += _BITS
      continue
    values.append(-(value >> 1) if value & 1 else value >> 1)
    value, shift = 0, 0
  return values


def serialize_mappings(mappings: Mappings) -> str:
  return ";".join(",".join("".join(encode_vlq(v) for v in seg) for seg in line)
                  for line in mappings)


def deserialize_mappings(text: str) -> list:
  return [[tuple(_decode_vlqs(seg)) for seg in line.split(",")] if line else []
          for line in text.split(";")]


class MappingsGenerator:
  """Builds mappings from absolute positions: ``new_group()`` starts a generated line,
  ``new_segment(column, source, line, column[, name])`` adds a segment to it."""

  def __init__(self):
    self._lines: list = []
    self._last = [0, 0, 0, 0, 0]  # column (per line), source, line, column, name

  def new_group(self) -> None:
    self._lines.append([])
    self._last[0] = 0

  def new_segment(self, *seg) -> None:
    if not self._lines:
      raise RuntimeError("No current group. Forgot to call new_group()?")
    if len(seg) not in (1, 4, 5):
      raise ValueError(f"a segment has 1, 4 or 5 fields, got {seg}")
    relative = tuple(v - self._last[i] for i, v in enumerate(seg))
    self._last[:len(seg)] = seg
    self._lines[-1].append(relative)

  def mappings(self) -> list:
    return self._lines
