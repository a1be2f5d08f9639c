"""``explicit_x64_dtypes``: a 64-bit dtype asked for while x64 is off warns (JAX's text, at
the user's line), raises, or is narrowed silently; and JAX's warning texts per function."""
import warnings

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.config import ExplicitX64Mode, explicit_x64_dtypes

from tests.util import printed_here, printed_in_jax

# Each asks for a 64-bit dtype through a function that takes one.
REQUESTS = {
    "array": lambda: jnp.array([1, 2], dtype="float64"),
    "asarray": lambda: jnp.asarray([1, 2], dtype="float64"),
    "zeros": lambda: jnp.zeros(3, "int64"),
    "ones": lambda: jnp.ones(3, np.float64),
    "full": lambda: jnp.full((2, 3), 1, dtype="int64"),
    "zeros_like": lambda: jnp.zeros_like(3, dtype="float64"),
    "ones_like": lambda: jnp.ones_like(3, dtype=np.int64),
    "full_like": lambda: jnp.full_like(jnp.ones(2), 1, dtype=np.int64),
    "empty": lambda: jnp.empty(3, np.float64),
    "arange": lambda: jnp.arange(3, dtype=np.float64),
    "linspace": lambda: jnp.linspace(0, 3, dtype=np.float64),
    "eye": lambda: jnp.eye(3, dtype=np.float64),
    "identity": lambda: jnp.identity(3, dtype=np.float64),
    "tri": lambda: jnp.tri(2, dtype="float64"),
    "astype": lambda: jnp.ones(3).astype("float64"),
    "convert_element_type": lambda: lax.convert_element_type(1.0, "float64"),
    "sum": lambda: jnp.sum(jnp.ones(3), dtype="float64"),
    "cumsum": lambda: jnp.cumsum(jnp.ones(3), dtype="float64"),
    "dot": lambda: lax.dot(jnp.ones(2), jnp.ones(2), preferred_element_type=np.float64),
    "iota": lambda: lax.iota(np.int64, 3),
    "view": lambda: jnp.ones(3).view("int64"),
    "uniform": lambda: hlox.random.uniform(hlox.random.key(0), dtype="float64"),
    "randint": lambda: hlox.random.randint(hlox.random.key(0), (), 0, 3, dtype=np.int64),
    "bits": lambda: hlox.random.bits(hlox.random.key(0), dtype=np.uint64),
    "jnp.int64": lambda: jnp.int64(3),
}
# JAX names the function, except for the random ones (and jnp.int64 is asarray).
NAMES = {"uniform": None, "randint": None, "bits": None, "jnp.int64": "asarray"}


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_warns_at_the_users_line_and_truncates(name):
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = REQUESTS[name]()  # the line the warning must point at
  # Only the dtype warnings count: a worker's first use of a device may warn about other
  # things (this test once caught two warnings in a full-suite worker).
  dtype_warnings = [w for w in caught if "requested dtype" in str(w.message)]
  assert len(dtype_warnings) == 1, [str(w.message) for w in caught]
  [w] = dtype_warnings
  wanted = NAMES.get(name, name)
  requested = (f"requested in {wanted} " if wanted else "")
  assert w.category is UserWarning
  assert str(w.message).startswith("Explicitly requested dtype ")
  assert f" {requested}is not available, and will be truncated to dtype " in str(w.message)
  assert w.filename == __file__
  assert np.dtype(out.dtype).itemsize <= 4


def test_error_mode_raises_and_allow_mode_is_silent():
  with explicit_x64_dtypes("error"):
    assert hlox.config.explicit_x64_dtypes is ExplicitX64Mode.ERROR
    with pytest.raises(ValueError, match="Explicitly requested dtype float64 requested in "
                                         "zeros is not available. To enable more dtypes"):
      jnp.zeros(3, "float64")
    with pytest.raises(ValueError, match="Explicitly requested dtype int64 is not available"):
      hlox.random.randint(hlox.random.key(0), (), 0, 3, dtype=np.int64)
    assert jnp.zeros(3, "float32").dtype == np.float32  # 32-bit requests are fine
  with explicit_x64_dtypes("allow"), warnings.catch_warnings():
    warnings.simplefilter("error")
    assert jnp.zeros(3, "float64").dtype == np.float64  # kept without a word
  assert hlox.config.explicit_x64_dtypes == "warn"


# Under 'allow' (x64 off), each of these keeps the 64-bit dtype it asks for: (call, dtype,
# NumPy's value of it).
KEPT = {
    "array int": (lambda: jnp.array(2 ** 40, dtype=jnp.int64), np.int64, np.int64(2 ** 40)),
    "array list": (lambda: jnp.array([1.0, 1e-300], dtype=jnp.float64), np.float64,
                   np.array([1.0, 1e-300])),
    "array complex": (lambda: jnp.array(1j, dtype=jnp.complex128), np.complex128, 1j),
    "asarray": (lambda: jnp.asarray(np.arange(3), dtype="float64"), np.float64,
                np.arange(3.0)),
    "zeros": (lambda: jnp.zeros(3, "int64"), np.int64, np.zeros(3, np.int64)),
    "ones": (lambda: jnp.ones(2, np.float64), np.float64, np.ones(2)),
    "full": (lambda: jnp.full((2,), 2 ** 40, dtype="int64"), np.int64,
             np.full(2, 2 ** 40, np.int64)),
    "full_like": (lambda: jnp.full_like(jnp.ones(2), 0.1, dtype=np.float64), np.float64,
                  np.full(2, 0.1)),
    "arange": (lambda: jnp.arange(3, dtype=np.float64), np.float64, np.arange(3.0)),
    "eye": (lambda: jnp.eye(2, dtype=np.float64), np.float64, np.eye(2)),
    "astype": (lambda: jnp.arange(3).astype("float64") / 3, np.float64, None),
    "convert_element_type": (lambda: lax.convert_element_type(0.1, "float64"), np.float64,
                             np.float64(0.1)),
    "iota": (lambda: lax.iota(np.int64, 3), np.int64, np.arange(3)),
    "jnp.int64": (lambda: jnp.int64(2 ** 40), np.int64, np.int64(2 ** 40)),
    "bits": (lambda: hlox.random.bits(hlox.random.key(0), (3,), np.uint64), np.uint64, None),
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_allow_mode_keeps_explicit_64_bit_dtypes(name):
  make, dtype, expected = KEPT[name]
  with explicit_x64_dtypes("allow"), warnings.catch_warnings():
    warnings.simplefilter("error")
    out = make()
  assert out.dtype == dtype
  if expected is not None:
    np.testing.assert_array_equal(np.asarray(out), expected)
  assert np.asarray(out).dtype == dtype
  # Without a request, nothing is 64-bit there.
  with explicit_x64_dtypes("allow"):
    assert jnp.array(np.float64(0.5)).dtype == np.float32
    assert jnp.arange(3).dtype == np.int32


def test_allow_mode_64_bit_values_through_jit_and_eager_ops():
  with explicit_x64_dtypes("allow"):
    x = jnp.array([0.1, 0.2], dtype=jnp.float64)
    f = hlox.jit(lambda a: jnp.sin(a.astype(jnp.float64)))
    np.testing.assert_allclose(np.asarray(f(x)), np.sin([0.1, 0.2]), rtol=1e-15)
    assert f(x).dtype == np.float64 and jnp.sin(x).dtype == np.float64
    np.testing.assert_array_equal(np.asarray(x + x), np.array([0.1, 0.2]) * 2)


@pytest.mark.parametrize("impl", ["threefry2x32", "rbg"])
@pytest.mark.parametrize("draw", [
    lambda key: hlox.random.bits(key, (4,), np.uint64),
    lambda key: hlox.random.uniform(key, (4,), np.float64),
    lambda key: hlox.random.normal(key, (4,), np.float64),
    hlox.jit(lambda key: hlox.random.uniform(key, (4,), np.float64)),
])
def test_allow_mode_random_draws_match_x64(impl, draw):
  with hlox.default_prng_impl(impl):
    key = hlox.random.key(1701)
    with explicit_x64_dtypes("allow"):
      allowed = draw(key)
    with hlox.enable_x64():
      wide = draw(key)
  assert allowed.dtype == wide.dtype and np.dtype(wide.dtype).itemsize == 8
  np.testing.assert_array_equal(np.asarray(allowed), np.asarray(wide))


def test_no_warning_without_a_64_bit_request_or_with_x64():
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    jnp.array([1, 2, 3], dtype=float)   # Python types mean the default dtype
    jnp.ones(3, dtype=int)
    jnp.arange(1.0).astype(int)
    jnp.zeros(2)
    jnp.sum(jnp.ones(3), dtype="float32")
    jnp.sum(jnp.ones(3))                # hlox's own code asks for no 64-bit dtype here
    jnp.searchsorted(jnp.arange(5.0), 2.0)
    with hlox.enable_x64(True):
      assert jnp.zeros(3, "float64").dtype == np.float64


def test_option_values_as_jax_validates_them():
  with pytest.raises(ValueError, match="'bad' is not a valid ExplicitX64Mode"):
    hlox.config.update("jax_explicit_x64_dtypes", "bad")
  with pytest.raises(TypeError, match="new enum value must be an instance of"):
    hlox.config.update("jax_explicit_x64_dtypes", 3)
  hlox.config.update("jax_explicit_x64_dtypes", ExplicitX64Mode.ERROR)
  try:
    assert hlox.config.jax_explicit_x64_dtypes == "error"
  finally:
    hlox.config.update("jax_explicit_x64_dtypes", "warn")


def test_jitted_function_retraced_under_another_mode():
  f = hlox.jit(lambda: jnp.zeros(2, "float64"))
  with pytest.warns(UserWarning, match="Explicitly requested dtype float64"):
    f()
  with explicit_x64_dtypes("error"), pytest.raises(ValueError, match="Explicitly requested"):
    f()


@pytest.mark.jax_oracle
def test_messages_match_jax():
  pytest.importorskip("jax")
  prelude = "import warnings\nwarnings.simplefilter('always')\n"
  programs = {
      "warn": ("with warnings.catch_warnings(record=True) as w:\n"
               "  warnings.simplefilter('always')\n"
               "  m.numpy.ones(3, 'float64')\n"
               "print(w[0].category.__name__, w[0].message)\n"),
      "error": ("m.config.update('jax_explicit_x64_dtypes', 'error')\n"
                "try:\n  m.lax.convert_element_type(1.0, np.int64)\n"
                "finally:\n  m.config.update('jax_explicit_x64_dtypes', 'warn')\n"),
  }
  expected = printed_in_jax(programs, prelude)
  for name, src in programs.items():
    assert printed_here(src, prelude) == expected[name], name


def test_allow_mode_keeps_a_shape_dtype_structs_64_bit_dtype():
  def f(x):
    with hlox.enable_x64():
      return x + jnp.int64(1)
  with explicit_x64_dtypes("allow"):
    spec = hlox.ShapeDtypeStruct((), np.int64)
    compiled = hlox.jit(f).lower(spec).compile()
    out = compiled(jnp.int64(2 ** 40))
  assert out.dtype == np.int64 and int(out) == 2 ** 40 + 1
  # Under 'warn' the struct stands for the canonical type.
  [aval], _ = hlox.jit(lambda x: x).lower(hlox.ShapeDtypeStruct((), np.int64)).in_avals
  assert aval.dtype == np.int32
