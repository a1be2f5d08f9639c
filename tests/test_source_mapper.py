"""hlox.experimental.source_mapper: TC39 source maps (VLQ encoding, relative segments) and
the maps of each pass (jaxpr, StableHLO, HLO before and after optimization) pointing back at
the line of this file that made the operation."""
import json

import pytest

import hlox.numpy as jnp
from hlox.experimental import source_mapper
from hlox.experimental.source_mapper import hlo, sourcemap


@pytest.mark.parametrize("value", [0, 1, 2, -1, -4, 123, 1024, 1025, 2 ** 16, 2 ** 31 - 1])
def test_vlq_roundtrip(value):
  assert sourcemap._decode_vlqs(sourcemap.encode_vlq(value)) == [value]
  assert sourcemap.encode_vlq(0) == "A" and sourcemap.encode_vlq(-1) == "D"
  assert sourcemap.encode_vlq(16) == "gB"  # five bits a digit, continuation set


def test_mappings_and_json():
  gen = source_mapper.MappingsGenerator()
  gen.new_group()
  gen.new_segment(0)
  gen.new_segment(0, 0, 0, 1)
  gen.new_group()
  gen.new_group()
  gen.new_segment(0, 0, 1, 0, 2)
  assert sourcemap.serialize_mappings(gen.mappings()) == "A,AAAC;;AACDE"
  data = {"version": 3, "sources": ["foo.js", "bar.js"], "sourcesContent": [None, None],
          "names": ["src", "maps", "are", "fun"], "mappings": "A,AAAC;;AACDE"}
  again = source_mapper.SourceMap.from_json(json.dumps(data)).to_json()
  assert json.loads(again) == data


def _add(x, y):
  return x + y


@pytest.mark.parametrize("pass_name,op", [("jaxpr", "add a b"),
                                          ("hlo:stable-hlo", "stablehlo.add"),
                                          ("hlo:original", "add("),
                                          ("hlo:optimized", "add(")])
def test_passes_map_back_to_the_source_line(pass_name, op):
  dump, = source_mapper.generate_sourcemaps(
      _add, passes=source_mapper.filter_passes(pass_name))(jnp.arange(3), jnp.arange(3))
  assert dump.pass_name == pass_name and op in dump.generated_code
  smap = dump.source_map
  assert smap.sources == [source_mapper.canonicalize_filename(__file__)]
  assert len(smap.mappings) == len(dump.generated_code.split("\n")) + 1
  col, file_idx, line, _ = next(m for m in smap.mappings if m)[0]
  assert col > 0 and file_idx == 0
  assert line == _add.__code__.co_firstlineno  # the ``return`` line, zero-based


def test_hlo_stack_frame_tables():
  text = "\n".join([
      "HloModule m", "", "FileNames", '1 "a.py"', '2 "b.py"', "", "FileLocations",
      "1 {file_name_id=2 function_name_id=1 line=7 end_line=7 column=2 end_column=3}", "",
      "StackFrames", "1 {file_location_id=1 parent_frame_id=1}", "", "ENTRY %e () -> pred[] {",
      '  ROOT %c = pred[] constant(true), metadata={op_name="c" stack_frame_id=1}', "}"])
  smap = hlo.parse_hlo_dump(text)
  assert smap.sources == ["b.py"]
  assert smap.mappings[13] == [(2, 0, 6, 0)]
  with pytest.raises(ValueError, match="stack frame 9"):
    hlo.parse_hlo_dump(text.replace("stack_frame_id=1}", "stack_frame_id=9}"))
