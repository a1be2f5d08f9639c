"""Modules that JAX exported and stored (its back-compatibility test data, read from an
installed JAX's package files, never imported as JAX) run in hlox through ``Exported.call``:
the CPU LAPACK custom calls they hold find their kernels, and the results are the stored
ones."""
import importlib.util
import os

import numpy as np
import pytest

import hlox
from hlox import export, tree_util
from hlox.core.avals import ShapedArray

_spec = importlib.util.find_spec("jax")  # locates the package without importing it
_DATA = None if _spec is None else os.path.join(
    os.path.dirname(_spec.origin), "_src", "internal_test_util", "export_back_compat_test_data")
needs_data = pytest.mark.skipif(_DATA is None or not os.path.isdir(_DATA),
                                reason="JAX's stored export test data is not installed")

# Routines whose every result is unique (eigenvectors and Schur vectors are not).
# (float32 and complex128 cases only, to keep the test short.)
_UNIQUE = ["cpu_cholesky_lapack_potrf", "cpu_lu_lapack_getrf", "cpu_qr_lapack_geqrf",
           "cpu_triangular_solve_blas_trsm", "cpu_tridiagonal_solve_lapack_gtsv"]


def _load(name):
  spec = importlib.util.spec_from_file_location(f"_stored_{name}",
                                                os.path.join(_DATA, f"{name}.py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return [data for attr, value in sorted(vars(module).items()) if attr.startswith("data_")
          for data in (value.values() if "inputs" not in value else [value])]


def _exported(data):
  avals = tuple(ShapedArray(a.shape, a.dtype) for a in data["inputs"])
  in_avals, in_tree = tree_util.tree_flatten((avals, {}))
  out_avals, out_tree = tree_util.tree_flatten(tree_util.tree_map(
      lambda a: ShapedArray(np.shape(a), np.asarray(a).dtype), data["expected_outputs"]))
  n_in, n_out = len(in_avals), len(out_avals)
  return export.Exported(
      fun_name="stored", in_tree=in_tree, in_avals=tuple(in_avals), out_tree=out_tree,
      out_avals=tuple(out_avals), _has_named_shardings=True,
      _in_named_shardings=(None,) * n_in, _out_named_shardings=(None,) * n_out,
      in_shardings_hlo=(None,) * n_in, out_shardings_hlo=(None,) * n_out,
      platforms=(data["platform"],), ordered_effects=(), unordered_effects=(),
      disabled_safety_checks=(), mlir_module_serialized=data["mlir_module_serialized"],
      calling_convention_version=data["xla_call_module_version"],
      nr_devices=data.get("nr_devices", 1), module_kept_var_idx=tuple(range(n_in)),
      uses_global_constants=False, _get_vjp=None)


@needs_data
@pytest.mark.jax_oracle
@pytest.mark.parametrize("name", _UNIQUE)
def test_stored_lapack_modules_run(name):
  with hlox.enable_x64(True):
    for data in _load(name):
      if np.asarray(tree_util.tree_leaves(data["expected_outputs"])[0]).dtype not in (
          np.float32, np.complex128):
        continue
      outs = hlox.jit(_exported(data).call)(*data["inputs"])
      for got, want in zip(tree_util.tree_leaves(outs),
                           tree_util.tree_leaves(data["expected_outputs"])):
        tol = 1e-4 if np.asarray(want).dtype in (np.float32, np.complex64) else 1e-10
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)
