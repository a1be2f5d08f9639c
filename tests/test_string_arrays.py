"""NumPy 2 StringDType arrays as hlox Arrays: stored on CPU devices, read back, vmapped over
as they are; every transformation that computes rejects them with JAX's errors."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.sharding import Mesh, NamedSharding, PartitionSpec as P

STRING = np.dtypes.StringDType()


def _strings(shape=(2,)):
  words = ["abcdefghijklmnopqrstuvwxyz", "cba", "", "ünïcödé", "x" * 40, "y", "zz", "w"]
  return np.array(words[:int(np.prod(shape))], dtype=STRING).reshape(shape)


@pytest.mark.parametrize("put", ["device_put", "asarray", "asarray_dtype"])
def test_single_device_round_trip(put):
  host = _strings((2,))
  device = hlox.devices("cpu")[1]
  if put == "device_put":
    x = hlox.device_put(host, device)
  else:
    x = jnp.asarray(host, device=device, dtype=STRING if put == "asarray_dtype" else None)
  x.block_until_ready()
  assert x.dtype == STRING and x.shape == (2,) and x.devices() == {device} and x.committed
  back = hlox.device_get(x)
  assert back.dtype == STRING
  np.testing.assert_array_equal(back, host)
  assert x.tolist() == host.tolist()
  host[0] = "changed"  # the Array holds its own copy
  assert np.asarray(x)[0] == "abcdefghijklmnopqrstuvwxyz"


def test_uncommitted_and_moved():
  x = hlox.device_put(_strings((2,)))
  assert not x.committed and x.devices() == {hlox.devices()[0]}
  y = hlox.device_put(x, hlox.devices()[3])
  assert y.devices() == {hlox.devices()[3]}
  np.testing.assert_array_equal(np.asarray(y), _strings((2,)))


@pytest.mark.parametrize("asarray", [False, True])
def test_multi_device_round_trip(asarray):
  host = _strings((4, 2))
  mesh = Mesh(np.array(hlox.devices()[:4]).reshape(2, 2), ("x", "y"))
  sharding = NamedSharding(mesh, P("x", "y"))
  x = jnp.asarray(host, device=sharding) if asarray else hlox.device_put(host, sharding)
  assert x.sharding == sharding and len(x.devices()) == 4
  back = np.asarray(x)
  assert back.dtype == STRING
  np.testing.assert_array_equal(back, host)


def test_shards_of_a_sharded_string_array():
  host = _strings((4, 2))
  mesh = Mesh(np.array(hlox.devices()[:4]).reshape(2, 2), ("x", "y"))
  x = hlox.device_put(host, NamedSharding(mesh, P("x", None)))
  shards = x.addressable_shards
  assert [s.device for s in shards] == hlox.devices()[:4]
  for s in shards:
    assert s.data.dtype == STRING and s.data.devices() == {s.device}
    np.testing.assert_array_equal(np.asarray(s.data), host[s.index])
  assert [s.index[0] for s in shards] == [slice(0, 2), slice(0, 2), slice(2, 4), slice(2, 4)]


def test_vmap_without_jit_passes_strings_through():
  x = hlox.device_put(_strings((3,)))
  out = hlox.vmap(lambda s: s)(x)
  assert out.dtype == STRING
  np.testing.assert_array_equal(np.asarray(out), _strings((3,)))


@pytest.mark.parametrize("transform", [
    lambda f: hlox.jit(f), lambda f: hlox.grad(f), lambda f: hlox.grad(f, allow_int=True),
    lambda f: (lambda x: hlox.jit(f).lower(x)),
])
def test_computing_transformations_reject_strings(transform):
  x = hlox.device_put(_strings((2,)))
  with pytest.raises(TypeError, match=r"^Argument '\['abcdefghijklmnopqrstuvwxyz' 'cba'\]' "
                                      r"of type <class '.*'> is not a valid JAX type\."):
    transform(lambda s: s)(x)


def test_promotion_rejects_strings():
  x = hlox.device_put(_strings((2,)))
  with pytest.raises(ValueError, match=r"^dtype=StringDType\(\) is not a valid dtype for JAX "
                                       r"type promotion\."):
    hlox.vmap(lambda s: s + jnp.arange(2))(x)
  with pytest.raises(ValueError, match="not a valid dtype for JAX type promotion"):
    jnp.promote_types(STRING, np.int32)


def test_conversion_errors():
  with pytest.raises(TypeError, match=r"^Cannot make an array with dtype bfloat16 from an "
                                      r"object with dtype StringDType\(\)\.$"):
    jnp.asarray(_strings(), dtype=jnp.bfloat16)
  with pytest.raises(TypeError, match=r"^Cannot make an array with dtype StringDType\(\) from "
                                      r"an object with dtype int32\.$"):
    jnp.asarray(np.arange(2, dtype=np.int32), dtype=STRING)
  with pytest.raises(TypeError, match=r"string arrays can only be made from NumPy arrays\. "
                                      r"Got:  <class 'list'>\."):
    jnp.array(["a", "b"], dtype=STRING)
  with pytest.raises(TypeError, match=r"ndmin 3 cannot be greater than object's ndims 1 for "
                                      r"string arrays\."):
    jnp.array(_strings(), ndmin=3)
  # NumPy's fixed-width strings remain no array type at all
  with pytest.raises(TypeError):
    hlox.device_put(np.array(["a", "b"]))


@pytest.mark.jax_oracle
def test_errors_match_jax():
  pytest.importorskip("jax")
  from tests.util import printed_in_jax, printed_here
  src = (
      "S = np.dtypes.StringDType()\n"
      "x = m.device_put(np.array(['ab', 'c'], dtype=S), m.devices()[0])\n"
      "print(np.asarray(x), np.asarray(x).dtype, x.shape, x.committed)\n"
      "print(np.asarray(m.vmap(lambda s: s)(x)))\n"
      "for f in [m.jit(lambda s: s), m.grad(lambda s: s),\n"
      "          m.vmap(lambda s: s + m.numpy.arange(2)),\n"
      "          lambda s: m.numpy.asarray(s, dtype=np.float32),\n"
      "          lambda s: m.numpy.asarray(np.arange(2), dtype=S)]:\n"
      "  try:\n    f(np.asarray(x))\n"
      "  except (TypeError, ValueError) as e:\n"
      "    print(type(e).__name__, str(e).replace('jaxlib._jax.ArrayImpl', 'ARRAY'))\n")
  assert printed_here(src) == printed_in_jax({"s": src})["s"]
