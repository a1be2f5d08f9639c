"""hlox.numpy as a Python array API namespace: ``__array_namespace_info__()`` and
``x.__array_namespace__()``."""
import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.config import config


def test_namespace_of_arrays_and_tracers():
  x = jnp.arange(4)
  assert x.__array_namespace__() is jnp
  assert x.__array_namespace__(api_version=jnp.__array_api_version__) is jnp
  seen = []
  hlox.jit(lambda y: seen.append(y.__array_namespace__()) or y)(x)
  assert seen == [jnp]
  with pytest.raises(ValueError, match=r"api_version='2021.12' is not available; available "
                                       r"versions are: \['2024.12'\]"):
    x.__array_namespace__(api_version="2021.12")


def test_capabilities_and_default_device():
  info = jnp.__array_namespace_info__()
  assert info.capabilities() == {"boolean indexing": False, "data-dependent shapes": False,
                                 "max dimensions": 64}
  assert info.default_device() is None
  devices = info.devices()
  assert devices[0] is None and set(hlox.devices()) <= set(devices[1:])


def test_default_dtypes_follow_x64():
  info = jnp.__array_namespace_info__()
  assert info.default_dtypes() == {"real floating": np.dtype("float32"),
                                   "complex floating": np.dtype("complex64"),
                                   "integral": np.dtype("int32"), "indexing": np.dtype("int32")}
  with hlox.enable_x64(True):
    assert info.default_dtypes(device=hlox.devices()[0])["real floating"] == np.float64
    assert info.default_dtypes()["indexing"] == np.int64


@pytest.mark.parametrize("kind, names", [
    ("bool", ["bool"]),
    ("signed integer", ["int8", "int16", "int32"]),
    ("unsigned integer", ["uint8", "uint16", "uint32"]),
    ("integral", ["int8", "int16", "int32", "uint8", "uint16", "uint32"]),
    ("real floating", ["float32"]),
    (("real floating", "complex floating"), ["float32", "complex64"]),
    (("integral", "bool"), ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32"]),
    (None, ["bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float32",
            "complex64"]),
])
def test_dtypes_by_kind(kind, names):
  got = jnp.__array_namespace_info__().dtypes(kind=kind)
  assert got == {n: np.dtype(n) for n in names}
  assert all(isinstance(v, np.dtype) for v in got.values())


def test_dtypes_with_x64_and_unknown_kind():
  info = jnp.__array_namespace_info__()
  assert not config.enable_x64
  with hlox.enable_x64(True):
    assert set(info.dtypes(kind="numeric")) == {
        "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32",
        "float64", "complex64", "complex128"}
  with pytest.raises(KeyError):
    info.dtypes(kind="floating")


@pytest.mark.jax_oracle
def test_info_matches_jax():
  pytest.importorskip("jax")
  from tests.util import printed_in_jax, printed_here
  src = (
      "ns = m.numpy\ninfo = ns.__array_namespace_info__()\n"
      "print(ns.__array_api_version__, info.capabilities(), info.default_device())\n"
      "print(len(info.devices()), info.devices()[0])\n"
      "for k in ['bool', 'numeric', ('integral', 'real floating'), None]:\n"
      "  print(k, sorted(info.dtypes(kind=k).items()))\n"
      "print(sorted(info.default_dtypes().items()))\n"
      "try:\n  ns.arange(3).__array_namespace__(api_version='2023.12')\n"
      "except ValueError as e:\n  print(e)\n")
  assert printed_here(src) == printed_in_jax({"info": src})["info"]
