"""The rest of ``hlox.lax`` against JAX itself (run in its own process): convolution shape
helpers, patches and unshared convolutions, rng_bit_generator's bits (THREE_FRY, PHILOX),
the three ragged_dot_general modes, scaled_dot, approx_max_k/min_k, mulhi and the names
that JAX's ``lax`` exports."""
import importlib.util
import textwrap

import numpy as np
import pytest

import hlox
from hlox import lax, tree_util

from tests.util import run_in_jax

pytestmark = [pytest.mark.jax_oracle,
              pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                                 reason="jax (the test oracle) is not installed")]

JAX_RUNNER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import jax, jax.lax
    from jax import tree_util

    def encode(r):
      leaves = tree_util.tree_leaves(r)
      return [{"dtype": str(np.asarray(x).dtype), "shape": list(np.shape(x)),
               "values": np.asarray(x).astype(np.float64).tolist()} for x in leaves]

    programs = json.loads(sys.stdin.read())
    out = {}
    for name, body in programs.items():
      ns = {}
      exec("def prog(lax, np):\\n" + body, ns)
      out[name] = encode(ns["prog"](jax.lax, np))
    print(json.dumps(out))
""")

_DATA = """
  rng = np.random.default_rng(0)
  x = rng.normal(size=(2, 5, 6, 3)).astype(np.float32)
  dn = ("NHWC", "HWIO", "NHWC")
"""

PROGRAMS = {
    "conv_shape_tuple": "  return lax.conv_shape_tuple((4, 3, 9, 8), (4, 3, 3, 2), (2, 1), "
                        "[(1, 0), (2, 2)], 2)",
    "conv_general_shape_tuple": "  return lax.conv_general_shape_tuple((2, 9, 8, 3), "
                                "(3, 2, 3, 4), (2, 1), 'SAME', ('NHWC', 'HWIO', 'NHWC'))",
    "conv_transpose_shape_tuple": "  return [lax.conv_transpose_shape_tuple((2, 9, 8, 3), "
                                  "(3, 2, 3, 4), (2, 3), p, ('NHWC', 'HWIO', 'NHWC')) for p in "
                                  "('SAME', 'VALID', [(1, 2), (0, 1)])]",
    "conv_general_permutations": "  return lax.conv_general_permutations(('NHWC', 'WHIO', "
                                 "'CWHN'))",
    "reduce_window_shape_tuple": "  return lax.reduce_window_shape_tuple((5, 7), (2, 3), "
                                 "(1, 2), [(1, 0), (0, 2)], (2, 1), (1, 2))",
    "patches_nhwc": _DATA + "  return lax.conv_general_dilated_patches(x, (2, 3), (1, 2), "
                            "'SAME', dimension_numbers=dn)",
    "patches_dilated": _DATA + "  return lax.conv_general_dilated_patches(np.moveaxis(x, 3, "
                               "1), (2, 3), (2, 1), [(1, 0), (0, 1)], lhs_dilation=(1, 2), "
                               "rhs_dilation=(1, 2))",
    "local_nhwc": _DATA + "  w = rng.normal(size=(2, 2, 18, 4)).astype(np.float32)\n"
                          "  return lax.conv_general_dilated_local(x, w, (2, 2), 'VALID', "
                          "(2, 3), dimension_numbers=dn)",
    "local_cnhw": _DATA + "  w = rng.normal(size=(4, 18, 5, 6)).astype(np.float32)\n"
                          "  return lax.conv_general_dilated_local(np.moveaxis(x, 3, 1), w, "
                          "(1, 1), 'SAME', (2, 3), dimension_numbers=('NCHW', 'OIHW', "
                          "'CNHW'))",
    "ragged_basic": "  rng = np.random.default_rng(1)\n"
                    "  l = rng.normal(size=(7, 4)).astype(np.float32)\n"
                    "  r = rng.normal(size=(3, 4, 5)).astype(np.float32)\n"
                    "  return lax.ragged_dot(l, r, np.array([2, 0, 3], np.int32))",
    "ragged_contracting": "  rng = np.random.default_rng(2)\n"
                          "  l = rng.normal(size=(3, 6)).astype(np.float32)\n"
                          "  r = rng.normal(size=(6, 2)).astype(np.float32)\n"
                          "  dn = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])\n"
                          "  return lax.ragged_dot_general(l, r, np.array([1, 3, 1], np.int32), "
                          "dn)",
    "ragged_batch": "  rng = np.random.default_rng(3)\n"
                    "  l = rng.normal(size=(5, 2, 3)).astype(np.float32)\n"
                    "  r = rng.normal(size=(5, 3, 2)).astype(np.float32)\n"
                    "  dn = lax.RaggedDotDimensionNumbers((([2], [1]), ([0], [0])), [0], [])\n"
                    "  return lax.ragged_dot_general(l, r, np.array([1, 2], np.int32), dn)",
    "ragged_batched_groups": "  rng = np.random.default_rng(4)\n"
                             "  l = rng.normal(size=(2, 5, 3)).astype(np.float32)\n"
                             "  r = rng.normal(size=(3, 2, 3, 4)).astype(np.float32)\n"
                             "  dn = lax.RaggedDotDimensionNumbers((([2], [2]), ([0], [1])), "
                             "[1], [0])\n"
                             "  gs = np.array([[1, 2, 2], [0, 4, 0]], np.int32)\n"
                             "  return lax.ragged_dot_general(l, r, gs, dn)",
    "scaled_dot": "  rng = np.random.default_rng(5)\n"
                  "  l = rng.normal(size=(3, 8)).astype(np.float32)\n"
                  "  r = rng.normal(size=(8, 2)).astype(np.float32)\n"
                  "  ls = rng.uniform(1, 2, size=(3, 2)).astype(np.float32)\n"
                  "  rs = rng.uniform(1, 2, size=(2, 2)).astype(np.float32)\n"
                  "  return [lax.scaled_dot(l, r, lhs_scale=ls, rhs_scale=rs, "
                  "preferred_element_type=t) for t in (np.float32, None)]",
    "approx_k": "  x = np.random.default_rng(6).normal(size=(4, 9)).astype(np.float32)\n"
                "  return lax.approx_max_k(x, 3), lax.approx_min_k(x, 2, reduction_dimension=0)",
    "mulhi": "  x = np.array([-2**31, -5, 7, 2**31 - 1, 12345], np.int32)\n"
             "  y = np.array([3, 2**31 - 1, -9, 2**31 - 1, -67890], np.int32)\n"
             "  return lax.mulhi(x, y), lax.mulhi(x.view(np.uint32), y.view(np.uint32))",
    "index_take": "  s = np.arange(60.0, dtype=np.float32).reshape(4, 3, 5)\n"
                  "  return lax.index_take(s, (np.array([0, 3, -1]), np.array([4, -5, 0])), "
                  "(0, 2))",
    "tile_stack": "  x = np.arange(6, dtype=np.int32).reshape(2, 3)\n"
                  "  return lax.tile(x, (2, 3)), lax.stack([x, x + 1], 1), lax.unstack(x, 1), "
                  "lax.split(x, (1, 2), 1)",
}

for _alg in ("RNG_THREE_FRY", "RNG_PHILOX", "RNG_DEFAULT"):
  for _dt in ("uint8", "uint16", "uint32"):
    PROGRAMS[f"rng_{_alg}_{_dt}"] = (
        "  key = np.array([1, 2, 3, 4], np.uint32)\n"
        f"  return lax.rng_bit_generator(key, (3, 5), np.{_dt}, lax.RandomAlgorithm.{_alg})")


def _encode(r):
  return [{"dtype": str(np.asarray(x).dtype), "shape": list(np.shape(x)),
           "values": np.asarray(x).astype(np.float64).tolist()}
          for x in tree_util.tree_leaves(r)]


def test_matches_jax():
  expected_all = run_in_jax(JAX_RUNNER, PROGRAMS)
  mismatches = []
  for name, body in sorted(PROGRAMS.items()):
    ns = {}
    exec("def prog(lax, np):\n" + body, ns)
    # One compile per program (shape helpers return Python ints: no arrays to compile).
    result = ns["prog"](lax, np) if "tuple" in name or "permutations" in name else \
        hlox.jit(lambda: ns["prog"](lax, np))()
    got = _encode(result)
    want = expected_all[name]
    if len(got) != len(want):
      mismatches.append(f"{name}: {len(got)} results vs JAX's {len(want)}")
      continue
    for i, (g, w) in enumerate(zip(got, want)):
      if g["shape"] != w["shape"] or (g["dtype"] != w["dtype"] and w["dtype"] != "int64"):
        mismatches.append(f"{name}[{i}]: {g['dtype']}{g['shape']} vs JAX's "
                          f"{w['dtype']}{w['shape']}")
      elif not np.allclose(np.asarray(g["values"]), np.asarray(w["values"]), rtol=1e-5,
                           atol=1e-5):
        mismatches.append(f"{name}[{i}]: values differ\n{g['values']}\nvs\n{w['values']}")
  assert not mismatches, "\n".join(mismatches)


# Sharded-array and multi-host names belong with sharded arrays (not lax's rooms), tokens
# with the ordered effects that consume them; see the package's notes.
_NOT_HERE = {"after_all", "after_all_p", "create_token", "create_token_p", "device_put_p",
             "pbroadcast", "pcast", "precv", "psend", "ragged_all_to_all",
             "ragged_all_to_all_p", "sharding_constraint_p", "with_sharding_constraint",
             "select_and_scatter_p"}


def test_public_names():
  script = ("import json, jax.lax as l\n"
            "print(json.dumps(sorted(n for n in dir(l) if not n.startswith('_'))))")
  names = set(run_in_jax(script, {}))
  missing = names - set(dir(lax)) - _NOT_HERE
  assert not missing, sorted(missing)
