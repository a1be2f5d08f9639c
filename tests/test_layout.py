"""hlox.experimental.layout: Layout, Format, jit with Formats, Array.format, device_put with
a Format, and the layouts XLA's CPU compiler reports."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.experimental.layout import Format, Layout, with_layout_constraint
from hlox.sharding import AxisType, NamedSharding, PartitionSpec as P, SingleDeviceSharding

ROW, COL = Layout((0, 1)), Layout((1, 0))  # row-major (the default) and column-major


def _mesh():
  return hlox.make_mesh((2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def _one_device():
  return SingleDeviceSharding(hlox.devices()[0])


def test_layout_and_format_values():
  a = Layout((1, 0), tiling=((8, 128),))
  assert a.major_to_minor == (1, 0) and a.tiling == ((8, 128),)
  assert a.sub_byte_element_size_in_bits == 0
  assert a == Layout([1, 0], [[8, 128]]) and hash(a) == hash(Layout((1, 0), ((8, 128),)))
  assert a != COL and a.update(tiling=None) == COL
  assert repr(COL) == ("Layout(major_to_minor=(1, 0), tiling=None, "
                       "sub_byte_element_size_in_bits=0)")
  assert repr(Layout.AUTO) == "AUTO"
  s = _one_device()
  f = Format(COL, s)
  assert (f.layout, f.sharding) == (COL, s) and f == Format(COL, s) and f != Format(ROW, s)
  assert Format().layout is None and Format().sharding is None
  assert Format(Layout.AUTO).layout is Layout.AUTO


def test_format_rejects_bad_input():
  with pytest.raises(ValueError, match="Sharding has to be concrete when layout"):
    Format(COL)
  with pytest.raises(TypeError, match="Invalid value received for the layout argument"):
    Format((1, 0), _one_device())
  with pytest.raises(TypeError, match="Invalid value received for the sharding argument"):
    Format(None, "cpu")


def test_default_layouts_are_row_major_on_cpu():
  x = np.arange(24.).reshape(2, 3, 4)
  compiled = hlox.jit(lambda v: v.T).lower(x).compile()
  (arg_format,), kwargs = compiled.input_formats
  assert kwargs == {}
  assert arg_format.layout == Layout((0, 1, 2))
  assert compiled.output_formats.layout == Layout((0, 1, 2))
  out = compiled(x)
  np.testing.assert_array_equal(out, x.T)
  assert out.format.layout == Layout((0, 1, 2))
  assert out.format.sharding == out.sharding
  assert hlox.device_put(x).format.layout == Layout((0, 1, 2))


def test_auto_output_layout_of_a_transpose_is_the_input_order():
  # XLA makes a transpose a relabelling when it may choose the result's layout.
  x = np.arange(32.).reshape(4, 8)
  f = hlox.jit(lambda v: v.T, in_shardings=Format(), out_shardings=Format(Layout.AUTO))
  compiled = f.lower(x).compile()
  assert compiled.input_formats[0][0].layout == ROW
  assert compiled.output_formats.layout == COL
  for out in (compiled(x), f(x)):
    assert out.format.layout == COL
    np.testing.assert_array_equal(out, x.T)
    # Every other program reads it right: it keeps a row-major copy.
    np.testing.assert_array_equal(out[1:3] + 1, x.T[1:3] + 1)
    np.testing.assert_array_equal(hlox.jit(lambda v: v @ v.T)(out), x.T @ x)


def test_concrete_layouts_round_trip_through_jit_on_a_mesh():
  mesh = _mesh()
  s = NamedSharding(mesh, P("x", "y"))
  x = np.arange(16 * 8.).reshape(16, 8)
  arr = hlox.device_put(x, Format(COL, s))
  assert arr.format == Format(COL, s)
  np.testing.assert_array_equal(arr, x)
  f = hlox.jit(lambda v: v * 3 + v[:, :1], in_shardings=Format(COL, s),
               out_shardings=Format(COL, s))
  want = x * 3 + x[:, :1]
  out = f(arr)
  assert out.format == Format(COL, s)
  np.testing.assert_array_equal(out, want)
  np.testing.assert_array_equal(f(x), want)  # a host value is laid out first
  compiled = f.lower(arr).compile()
  assert compiled.input_formats[0][0] == Format(COL, s)
  assert compiled.output_formats == Format(COL, s)
  np.testing.assert_array_equal(compiled(arr), want)
  # An array in another layout is no argument for it, as in JAX.
  with pytest.raises(ValueError, match="Layout passed to jit does not match the layout"):
    f(hlox.device_put(x, s))
  # Plain jit takes it too (its row-major copy).
  np.testing.assert_array_equal(hlox.jit(lambda v: v - 1)(out), want - 1)


def test_formats_of_one_compile_feed_another():
  x = np.arange(12.).reshape(6, 2)
  auto = hlox.jit(lambda a, b: (a * 2, b.T), in_shardings=Format(Layout.AUTO),
                  out_shardings=Format(Layout.AUTO)).lower(x, x).compile()
  arg_formats, _ = auto.input_formats
  again = hlox.jit(lambda a, b: (a * 2, b.T), in_shardings=arg_formats).lower(x, x).compile()
  assert list(again.input_formats[0]) == list(arg_formats)
  o1, o2 = again(x, x)
  np.testing.assert_array_equal(o1, x * 2)
  np.testing.assert_array_equal(o2, x.T)


def test_shape_dtype_struct_and_eval_shape_keep_formats():
  s = _one_device()
  sds = hlox.ShapeDtypeStruct((4, 2), np.float32, sharding=Format(COL, s))
  assert sds.format == Format(COL, s) and sds.sharding == s
  assert sds != hlox.ShapeDtypeStruct((4, 2), np.float32, sharding=s)
  with pytest.raises(TypeError, match="`Layout.AUTO` cannot be used in place of a device-local"):
    hlox.ShapeDtypeStruct((4, 2), np.float32, sharding=Format(Layout.AUTO))
  f = hlox.jit(lambda v: v * v, in_shardings=Format(COL, s), out_shardings=Format(COL, s))
  out = hlox.eval_shape(f, np.ones((4, 2), np.float32))
  assert out.format == Format(COL, s) and out.shape == (4, 2)


def test_device_put_and_make_array_from_callback_with_a_format():
  x = np.arange(16, dtype=np.int32).reshape(8, 2)
  s = _one_device()
  out = hlox.device_put(x, Format(None, s))
  np.testing.assert_array_equal(out, x)
  assert out.committed
  made = hlox.make_array_from_callback(x.shape, Format(COL, s), lambda idx: x[idx])
  np.testing.assert_array_equal(made, x)
  assert made.format == Format(COL, s)
  for bad in (Format(Layout.AUTO, s), Format(Layout.AUTO)):
    with pytest.raises(ValueError, match="sharding and layout.*should be concrete"):
      hlox.device_put(x, bad)
  with pytest.raises(ValueError, match="Length of major_to_minor and the rank"):
    hlox.device_put(np.arange(8), Format(Layout((0, 1, 2)), s))
  with pytest.raises(TypeError, match="`Layout.AUTO` cannot be used in place of a device-local"):
    hlox.make_array_from_callback(x.shape, Format(Layout.AUTO, s), lambda idx: x[idx])
  with pytest.raises(TypeError, match="sharding should be an instance of `jax.sharding`"):
    hlox.make_array_from_callback(x.shape, Format(None, None), lambda idx: x[idx])


def test_jit_rejects_bare_layouts_and_mismatched_ranks():
  x = np.arange(8.)
  with pytest.raises(ValueError, match="does not accept device-local layouts directly"):
    hlox.jit(lambda v: v, in_shardings=Layout.AUTO).lower(x)
  f = hlox.jit(lambda v: v * 2, in_shardings=Format(Layout((0, 1, 2)), _one_device()))
  with pytest.raises(ValueError, match="Length of major_to_minor and the rank"):
    f(x)


def test_donation_with_layouts():
  x = np.arange(32.).reshape(8, 4)
  s = _one_device()
  arr = hlox.device_put(x, Format(COL, s))
  f = hlox.jit(lambda v: v * 2, in_shardings=Format(COL, s), out_shardings=Format(COL, s),
               donate_argnums=0)
  out = f(arr)
  assert arr.is_deleted()
  np.testing.assert_array_equal(out, x * 2)
  g = hlox.jit(lambda v: v * 2, donate_argnums=0, in_shardings=Format(Layout.AUTO))
  with pytest.raises(ValueError, match="Did you mean to set the.*output layout.*AUTO"):
    g(jnp.arange(8))


def test_layout_constraints_on_results():
  s = _one_device()
  x = np.arange(32.).reshape(4, 8)
  out = hlox.jit(lambda v: hlox.lax.with_sharding_constraint(v.T, Format(ROW, s)))(x)
  assert out.format.layout == ROW
  np.testing.assert_array_equal(out, x.T)
  out = hlox.jit(lambda v: with_layout_constraint(v + 1, COL))(x)
  assert out.format.layout == COL
  np.testing.assert_array_equal(out, x + 1)
  np.testing.assert_array_equal(out * 1, x + 1)
  with pytest.raises(TypeError, match="expects a `Layout`"):
    with_layout_constraint(x, Layout.AUTO)


def test_programs_check_the_layout_of_their_arguments():
  # XLA would read a buffer of another layout in the compiled order: refused instead.
  from hlox.interpreters import xla
  x = np.arange(32.).reshape(4, 8)
  row = hlox.device_put(x)
  with pytest.raises(ValueError, match="compiled for input layouts that disagree"):
    xla.check_arg_layouts([row._buf], {0: COL})
  xla.check_arg_layouts([row._buf], {0: ROW})


@pytest.mark.jax_oracle
def test_reported_formats_match_jax():
  pytest.importorskip("jax")
  from tests.util import printed_here, printed_in_jax
  src = (
      "from jax_layout import Format, Layout\n"
      "x = np.arange(24.).reshape(2, 3, 4)\n"
      "c = m.jit(lambda v: (v.T, v * 2), in_shardings=Format(Layout.AUTO),\n"
      "          out_shardings=Format(Layout.AUTO)).lower(x).compile()\n"
      "print([f.layout.major_to_minor for f in c.input_formats[0]])\n"
      "print([f.layout.major_to_minor for f in c.output_formats])\n"
      "o = c(x)\n"
      "print([v.format.layout.major_to_minor for v in o], np.asarray(o[0]).sum())\n")
  here = printed_here(src.replace("jax_layout", "hlox.experimental.layout"))
  there = printed_in_jax({"f": src.replace("jax_layout", "jax.experimental.layout")})["f"]
  assert here == there


def test_default_result_layout_asks_for_nothing_and_donation_aliases():
  # As JAX: a Format whose layout is what the devices give anyway is its sharding alone, so
  # a donated argument aliases the result (not a mere buffer donor).
  s = _one_device()
  x = hlox.device_put(np.arange(12.).reshape(3, 4), s)
  out_format = Format(x.format.layout, s)
  f = hlox.jit(lambda v: v * 2, out_shardings=out_format, donate_argnums=0)
  text = f.lower(x).as_text()
  assert "tf.aliasing_output = 0" in text and "jax.buffer_donor" not in text
  assert "mhlo.layout_mode" not in text
  out = f(x)
  np.testing.assert_array_equal(out, np.arange(12.).reshape(3, 4) * 2)
  assert out.format == out_format and x.is_deleted()
  g = hlox.jit(lambda v: v.sum(0), out_shardings=Format(Layout((0, 1)), s))
  with pytest.raises(ValueError, match="Length of major_to_minor and the rank"):
    g(np.ones((2, 3)))
