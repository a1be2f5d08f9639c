"""The spectral primitives (eigh, svd, eig, schur, hessenberg, tridiagonal) lowered for the
GPU platforms (cuda, rocm) and tpu: the same kernels, with the same operands, layouts and
attributes, as JAX 0.10.2 emits there, and no rule where JAX has none.

Nothing here runs on a GPU or TPU: lowering needs neither. The JAX-oracle test compares each
custom call with JAX's (all of JAX's lowerings come from one subprocess); the other tests are
a spec of the targets each rule must name, so that CI without JAX still covers the rules.
"""
import importlib.util
import re

import numpy as np
import pytest

import hlox
from hlox import lax
from hlox.config import enable_x64
from hlox.lax.linalg import gpu

from util import LOWERING_RUNNER, custom_calls, lower_in_hlox, run_in_jax

PLATFORMS = ("cuda", "rocm", "tpu")
FLOATS = ("float32", "float64", "complex64", "complex128")

# name -> (body, [(shape, dtype)]): lowered for every platform in PLATFORMS. The bodies see
# jax/jnp/lax/np (hlox's modules here, JAX's in the oracle).
CASES = {}


def _case(name, body, shape, dtype):
  CASES[name] = (body, [(shape, dtype)])


for _i, (_shape, _dtype) in enumerate([((3, 3), "float32"), ((2, 4, 4), "float64"),
                                       ((5, 5), "complex64"), ((2, 1, 3, 3), "complex128")]):
  _case(f"eigh{_i}", "lambda a: lax.linalg.eigh(a)", _shape, _dtype)
  _case(f"eigh_upper{_i}", "lambda a: lax.linalg.eigh(a, lower=False, symmetrize_input=False)",
        _shape, _dtype)
  _case(f"eig{_i}", "lambda a: lax.linalg.eig(a)", _shape, _dtype)
  _case(f"eig_right{_i}", "lambda a: lax.linalg.eig(a, compute_left_eigenvectors=False)",
        _shape, _dtype)
  _case(f"eigvals{_i}", "lambda a: lax.linalg.eig(a, compute_left_eigenvectors=False, "
        "compute_right_eigenvectors=False)", _shape, _dtype)
  _case(f"eig_left{_i}", "lambda a: lax.linalg.eig(a, compute_right_eigenvectors=False)",
        _shape, _dtype)
  _case(f"tridiagonal{_i}", "lambda a: lax.linalg.tridiagonal(a)", _shape, _dtype)
  _case(f"tridiagonal_upper{_i}", "lambda a: lax.linalg.tridiagonal(a, lower=False)",
        _shape, _dtype)
  _case(f"schur{_i}", "lambda a: lax.linalg.schur(a)", _shape, _dtype)
  _case(f"hessenberg{_i}", "lambda a: lax.linalg.hessenberg(a)", _shape, _dtype)

_case("eigh_subset", "lambda a: lax.linalg.eigh(a, subset_by_index=(1, 3))", (4, 4), "float32")
_case("eigh_subset_batch", "lambda a: lax.linalg.eigh(a, lower=False, subset_by_index=(0, 2))",
      (2, 3, 3), "complex64")
_case("eigh_subset_full", "lambda a: lax.linalg.eigh(a, subset_by_index=(0, 3))", (3, 3),
      "float64")
_case("eigh_unsorted", "lambda a: lax.linalg.eigh(a, sort_eigenvalues=False)", (3, 3),
      "float32")
_case("eigh_empty", "lambda a: lax.linalg.eigh(a)", (2, 0, 0), "float32")
for _impl in ("QR", "JACOBI", "QDWH"):
  _case(f"eigh_{_impl}", f"lambda a: lax.linalg.eigh(a, implementation="
        f"lax.linalg.EighImplementation.{_impl})", (3, 3), "float32")
_case("jnp_eigh", "lambda a: jnp.linalg.eigh(a)", (4, 4), "float64")
_case("jnp_eigvalsh", "lambda a: jnp.linalg.eigvalsh(a)", (2, 4, 4), "complex64")
_case("eig_magma", "lambda a: lax.linalg.eig(a, implementation="
      "lax.linalg.EigImplementation.MAGMA)", (3, 3), "float32")
_case("eig_lapack", "lambda a: lax.linalg.eig(a, implementation="
      "lax.linalg.EigImplementation.LAPACK)", (3, 3), "complex64")
_case("eig_cusolver", "lambda a: lax.linalg.eig(a, compute_left_eigenvectors=False, "
      "implementation=lax.linalg.EigImplementation.CUSOLVER)", (3, 3), "float32")
_case("jnp_eig", "lambda a: jnp.linalg.eig(a)", (2, 3, 3), "float64")
_case("jnp_eigvals", "lambda a: jnp.linalg.eigvals(a)", (3, 3), "complex128")

_SVD_SHAPES = [((3, 3), "float32"), ((4, 2), "float64"), ((2, 5), "complex64"),
               ((2, 3, 4), "complex128"), ((40, 36), "float32"), ((2, 33, 40), "complex64"),
               ((1030, 3), "float32"), ((3, 1030), "float64")]
for _i, (_shape, _dtype) in enumerate(_SVD_SHAPES):
  _case(f"svd{_i}", "lambda a: lax.linalg.svd(a)", _shape, _dtype)
  _case(f"svd_reduced{_i}", "lambda a: lax.linalg.svd(a, full_matrices=False)", _shape, _dtype)
  _case(f"svd_values{_i}", "lambda a: lax.linalg.svd(a, compute_uv=False)", _shape, _dtype)
for _i, (_shape, _dtype) in enumerate(_SVD_SHAPES[:6]):
  for _alg in ("QR", "JACOBI", "POLAR", "DIVIDE_AND_CONQUER", "DEFAULT"):
    for _full in (True, False):
      _case(f"svd_{_alg}_{_full}_{_i}", f"lambda a: lax.linalg.svd(a, full_matrices={_full}, "
            f"algorithm=lax.linalg.SvdAlgorithm.{_alg})", _shape, _dtype)
  _case(f"svd_QR_values{_i}", "lambda a: lax.linalg.svd(a, compute_uv=False, "
        "algorithm=lax.linalg.SvdAlgorithm.QR)", _shape, _dtype)
_case("svd_subset", "lambda a: lax.linalg.svd(a, full_matrices=False, subset_by_index=(0, 1))",
      (3, 2), "float32")
_case("svd_subset_full", "lambda a: lax.linalg.svd(a, full_matrices=False, "
      "subset_by_index=(0, 2))", (3, 2), "float32")
_case("svd_empty", "lambda a: lax.linalg.svd(a)", (0, 3), "float32")
_case("svd_empty_values", "lambda a: lax.linalg.svd(a, compute_uv=False)", (2, 4, 0), "float64")
_case("jnp_svd", "lambda a: jnp.linalg.svd(a, full_matrices=False)", (5, 3), "float32")
_case("jnp_pinv", "lambda a: jnp.linalg.pinv(a)", (3, 4), "float32")
_case("jnp_matrix_rank", "lambda a: jnp.linalg.matrix_rank(a)", (4, 3), "float64")
_case("jnp_norm2", "lambda a: jnp.linalg.norm(a, ord=2)", (3, 3), "complex64")

PROGRAMS = {f"{platform}:{name}": (platform, body, args)
            for name, (body, args) in CASES.items() for platform in PLATFORMS}


def hlox_lowering(platform, body, args):
  """``{"text": ...}``, or ``{"error": class name, "message": ...}`` as the JAX runner says."""
  try:
    with enable_x64():  # as the oracle runner: float64 stays float64
      return {"text": lower_in_hlox(platform, body, args)}
  except Exception as e:  # noqa: BLE001 - the class is compared with JAX's
    return {"error": type(e).__name__, "message": str(e)}


def calls_with_configs(text):
  """``custom_calls(text)`` plus each call's API version and opaque (string) backend config,
  which the TPU's ``Eigh`` call carries instead of an attribute dictionary."""
  calls = custom_calls(text)
  ops = re.findall(r"stablehlo\.custom_call @[\w.]+\(.*", text)
  assert len(ops) == len(calls)
  for call, op in zip(calls, ops):
    config = re.search(r'\bbackend_config = "([^"]*)"', op)
    version = re.search(r"api_version = (\d+)", op)
    call["opaque_config"] = config.group(1) if config else ""
    # JAX's typed-FFI calls say version 1 with an mhlo.backend_config dictionary, hlox's 4
    # with a dictionary backend_config: the same call to XLA (see custom_calls).
    typed = "mhlo.backend_config" in op or "backend_config = {" in op
    call["api_version"] = "ffi" if typed else (version.group(1) if version else "1")
  return calls


# --- JAX oracle ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def jax_lowerings():
  return run_in_jax(LOWERING_RUNNER, PROGRAMS)


def _is_tpu_svd(name):
  """The TPU SVD is an algorithm on other primitives (QDWH, then eigh), in hlox as in JAX:
  hlox's QDWH unrolls the QR-based steps that JAX loops over, and the two place their
  helper functions differently, so the same kernels are called, but not equally often nor in
  the same textual order: these programs are compared as sets of distinct calls."""
  platform, case = name.split(":")
  return platform == "tpu" and ("svd" in case or case in (
      "jnp_pinv", "jnp_matrix_rank", "jnp_norm2"))


def _tpu_qr_missing():
  # The TPU's QR (Qr and ProductOfElementaryHouseholderReflectors calls) comes with the
  # factorizations' lowerings; without it the TPU SVD stops at geqrf, and only there.
  from hlox.interpreters import xla
  from hlox.lax.linalg.factorizations import geqrf_p
  return xla.get_lowering_rule(geqrf_p, "tpu") is None


@pytest.mark.jax_oracle
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_custom_calls_match_jax(name, jax_lowerings):
  want = jax_lowerings[name]
  got = hlox_lowering(*PROGRAMS[name])
  if name.split(":")[-1].startswith(("schur", "hessenberg")) and PROGRAMS[name][0] != "tpu":
    # JAX has no GPU rule; hlox runs the CPU's LAPACK routine in a host callback there.
    assert want["error"] == "NotImplementedError", want
    assert [c["target"] for c in custom_calls(got["text"])] == ["xla_ffi_python_gpu_callback"]
    return
  if "error" in want:
    assert got.get("error") == want["error"], (want, got.get("text", got))
    return
  if _is_tpu_svd(name) and _tpu_qr_missing() and "error" in got:
    assert got["error"] == "NotImplementedError" and "geqrf" in got["message"], got
    return
  assert "text" in got, got
  got_calls, want_calls = calls_with_configs(got["text"]), calls_with_configs(want["text"])
  if _is_tpu_svd(name):
    distinct = lambda calls: sorted({repr(sorted(c.items())) for c in calls})  # noqa: E731
    assert distinct(got_calls) == distinct(want_calls)
  else:
    assert got_calls == want_calls


# --- spec (no JAX needed) --------------------------------------------------------------------

def _targets(platform, body, shape, dtype):
  with enable_x64():
    text = lower_in_hlox(platform, body, [(shape, dtype)])
  return [c["target"] for c in custom_calls(text)]


@pytest.mark.parametrize("platform,prefix", [("cuda", "cu"), ("rocm", "hip")])
def test_gpu_targets(platform, prefix):
  solver = f"{prefix}solver"
  eigh = "lambda a: lax.linalg.eigh(a)"
  assert _targets(platform, eigh, (2, 3, 3), "float32") == [f"{solver}_syevd_ffi"]
  svd = "lambda a: lax.linalg.svd(a)"
  assert _targets(platform, svd, (3, 5), "complex64") == [f"{solver}_gesvdj_ffi"]
  assert _targets(platform, svd, (2000, 4), "float32") == [f"{solver}_gesvd_ffi"]
  qr_svd = "lambda a: lax.linalg.svd(a, algorithm=lax.linalg.SvdAlgorithm.QR)"
  assert _targets(platform, qr_svd, (3, 5), "float64") == [f"{solver}_gesvd_ffi"]
  polar_svd = "lambda a: lax.linalg.svd(a, algorithm=lax.linalg.SvdAlgorithm.POLAR)"
  assert _targets(platform, polar_svd, (3, 5), "float64") == [f"{solver}_gesvdp_ffi"]
  assert _targets(platform, "lambda a: lax.linalg.tridiagonal(a)", (4, 4), "complex128") == [
      f"{solver}_sytrd_ffi"]
  eig = "lambda a: lax.linalg.eig(a)"  # left eigenvectors: always the hybrid kernel
  assert _targets(platform, eig, (3, 3), "float32") == [f"{prefix}hybrid_eig_real"]
  assert _targets(platform, eig, (3, 3), "complex64") == [f"{prefix}hybrid_eig_comp"]


def test_gpu_only_options():
  svd_dc = "lambda a: lax.linalg.svd(a, algorithm=lax.linalg.SvdAlgorithm.DIVIDE_AND_CONQUER)"
  assert _targets("rocm", svd_dc, (3, 3), "float32") == ["hipsolver_gesdd_ffi"]
  with pytest.raises(NotImplementedError, match="ROCm"):
    lower_in_hlox("cuda", svd_dc, [((3, 3), "float32")])
  for platform in ("cuda", "rocm"):
    with pytest.raises(NotImplementedError, match="subset_by_index"):
      lower_in_hlox(platform, "lambda a: lax.linalg.eigh(a, subset_by_index=(0, 1))",
                    [((3, 3), "float32")])


# JAX's runner, as if the CUDA plugin had cuSOLVER 11.7.1 (JAX then lowers eig to geev).
GEEV_RUNNER = LOWERING_RUNNER.replace(
    "from jax import lax\n", "from jax import lax\nimport types, jax._src.lax.linalg as _l\n"
    "_l.cuda_versions = types.SimpleNamespace(cusolver_get_version=lambda: 11701)\n")


@pytest.mark.jax_oracle
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
def test_gpu_eig_geev_matches_jax(monkeypatch):
  assert GEEV_RUNNER != LOWERING_RUNNER
  programs = {f"{name}{i}": ("cuda", body, [(shape, dtype)])
              for name, body in [("right", CASES["eig_right0"][0]),
                                 ("values", CASES["eigvals0"][0]),
                                 ("both", CASES["eig0"][0])]
              for i, (shape, dtype) in enumerate([((2, 3, 3), "float32"),
                                                  ((3, 3), "complex128")])}
  want = run_in_jax(GEEV_RUNNER, programs)
  assert "cusolver_geev_ffi" in want["right0"]["text"]
  monkeypatch.setattr(gpu, "cusolver_version", lambda: 11701)
  for name, program in programs.items():
    got = hlox_lowering(*program)
    assert calls_with_configs(got["text"]) == calls_with_configs(want[name]["text"]), name


def test_gpu_eig_uses_cusolver_geev_when_available(monkeypatch):
  # JAX uses cuSOLVER's geev (11.7.1 on) when no left eigenvectors are asked for; the
  # packed real eigenvectors are unpacked into complex ones after the call.
  monkeypatch.setattr(gpu, "cusolver_version", lambda: 11701)
  right = "lambda a: lax.linalg.eig(a, compute_left_eigenvectors=False)"
  assert _targets("cuda", right, (2, 3, 3), "float32") == ["cusolver_geev_ffi"]
  assert _targets("rocm", right, (2, 3, 3), "float32") == ["hiphybrid_eig_real"]
  assert _targets("cuda", "lambda a: lax.linalg.eig(a)", (3, 3), "float32") == [
      "cuhybrid_eig_real"]
  monkeypatch.setattr(gpu, "cusolver_version", lambda: 11600)
  assert _targets("cuda", right, (3, 3), "float32") == ["cuhybrid_eig_real"]


def test_tpu_eigh_is_the_eigh_custom_call():
  text = lower_in_hlox("tpu", "lambda a: lax.linalg.eigh(a, lower=False)", [((2, 3, 3),
                                                                                "float32")])
  calls = calls_with_configs(text)
  assert [(c["target"], c["opaque_config"]) for c in calls] == [("Eigh", "0,1,100,1e-6")]


def test_tpu_eigh_subset_and_large():
  # subset_by_index: the sorted full decomposition of each matrix (in a map), sliced.
  text = lower_in_hlox("tpu", "lambda a: lax.linalg.eigh(a, subset_by_index=(1, 3))",
                       [((2, 4, 4), "float32")])
  calls = calls_with_configs(text)
  assert [(c["target"], c["operands"], c["opaque_config"]) for c in calls] == [
      ("Eigh", ["tensor<4x4xf32>"], "1,1,100,1e-6")]
  # Above 256x256 JAX splits the spectrum by QDWH first; hlox gives the whole matrix to the
  # Jacobi solver, as the explicit Jacobi implementation does.
  assert _targets("tpu", "lambda a: lax.linalg.eigh(a)", (300, 300), "float32") == ["Eigh"]
  jacobi = "lambda a: lax.linalg.eigh(a, implementation=lax.linalg.EighImplementation.JACOBI)"
  assert _targets("tpu", jacobi, (300, 300), "float32") == ["Eigh"]


def test_unpack_conjugate_pairs():
  # cuSOLVER's geev packs a conjugate pair's eigenvector as (real part, imaginary part)
  # columns, as LAPACK does; the unpacking runs on any backend.
  from hlox.lax.linalg.spectral import _unpack_conjugate_pairs
  rng = np.random.default_rng(0)
  a = rng.standard_normal((3, 5, 5))
  w, v = np.linalg.eig(a)
  packed = v.real.copy()
  for b in range(a.shape[0]):
    for j in range(4):
      if w[b, j].imag > 0:  # numpy puts the positive imaginary part first
        packed[b, :, j + 1] = v[b, :, j].imag
  got = hlox.jit(_unpack_conjugate_pairs)(w.astype(np.complex64), packed.astype(np.float32))
  np.testing.assert_allclose(np.asarray(got), v, atol=1e-6)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_no_rule_where_jax_has_none(platform):
  # (schur and hessenberg lower on GPUs through a host callback: see the next test.)
  missing = ["schur", "hessenberg", "eig", "tridiagonal"] if platform == "tpu" else []
  for name in missing:
    with pytest.raises(NotImplementedError, match=f"{name}.*{platform}"):
      lower_in_hlox(platform, f"lambda a: lax.linalg.{name}(a)", [((3, 3), "float32")])


@pytest.mark.parametrize("name", ["schur", "hessenberg"])
def test_schur_and_hessenberg_on_gpus_run_lapack_on_the_host(name):
  from hlox.lax.linalg import gpu, spectral
  a = np.random.default_rng(1).standard_normal((2, 5, 5)).astype(np.float32)
  for platform in ("cuda", "rocm"):
    text = lower_in_hlox(platform, f"lambda a: lax.linalg.{name}(a)", [((2, 5, 5), "float32")])
    calls = custom_calls(text)
    assert [c["target"] for c in calls] == ["xla_ffi_python_gpu_callback"]
    assert calls[0]["operands"] == ["tensor<2x5x5xf32>"]
  # What the callback runs: the primitive on this process's CPU, as eager code gets it.
  prim = getattr(spectral, f"{name}_p")
  params = dict(compute_schur_vectors=True, sort_eig_vals=False, select_callable=None) \
      if name == "schur" else {}
  got = gpu.on_host_cpu(prim, params)(a)
  want = getattr(hlox.lax.linalg, name)(a)
  for g, w in zip(got, want):
    assert isinstance(g, np.ndarray)
    np.testing.assert_array_equal(g, np.asarray(w))


# --- the TPU's SVD, run on CPU ---------------------------------------------------------------

def _check_svd(a, s, u=None, vh=None, full=False):
  tol = 2e-5 if a.dtype in (np.float32, np.complex64) else 1e-12
  s_ref = np.linalg.svd(a, compute_uv=False)
  np.testing.assert_allclose(s, s_ref, atol=50 * tol * s_ref.max())
  if u is None:
    return
  m, n = a.shape[-2:]
  k = min(m, n)
  assert u.shape[-2:] == ((m, m) if full else (m, k))
  assert vh.shape[-2:] == ((n, n) if full else (k, n))
  rec = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
  np.testing.assert_allclose(rec, a, atol=50 * tol * np.abs(a).max())
  for q in (u, np.conj(np.swapaxes(vh, -1, -2))):  # orthonormal columns
    qhq = np.conj(np.swapaxes(q, -1, -2)) @ q
    np.testing.assert_allclose(qhq, np.broadcast_to(np.eye(q.shape[-1]), qhq.shape),
                               atol=50 * tol)


@pytest.mark.parametrize("shape,dtype,full,uv", [
    ((4, 4), np.float32, True, True), ((7, 3), np.float64, True, True),
    ((3, 8), np.complex64, False, True), ((2, 5, 4), np.complex128, False, False),
    ((2, 20, 4), np.float64, False, True)])
def test_tpu_svd_algorithm_on_cpu(shape, dtype, full, uv):
  # The composition the TPU rule lowers, compiled for the CPU and checked against NumPy.
  from hlox.lax.linalg.spectral import _svd_tpu
  rng = np.random.default_rng(1)
  a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dtype in (
      np.complex64, np.complex128) else 0)
  a = a.astype(dtype)
  with enable_x64():
    out = hlox.jit(lambda x: _svd_tpu(x, full_matrices=full, compute_uv=uv,
                                      subset_by_index=None))(a)
    out = [np.asarray(o) for o in out]
  if uv:
    _check_svd(a, out[0], out[1], out[2], full)
  else:
    _check_svd(a, out[0])


def test_tpu_svd_algorithm_edge_cases_on_cpu():
  from hlox.lax.linalg.spectral import _svd_tpu
  rng = np.random.default_rng(2)
  with enable_x64():
    svd = hlox.jit(lambda x, uv=True, subset=None: _svd_tpu(
        x, full_matrices=False, compute_uv=uv, subset_by_index=subset), static_argnums=(1, 2))
    a = rng.standard_normal((6, 4))
    s, = svd(a, False, (1, 3))  # the 2nd and 3rd largest singular values
    np.testing.assert_allclose(np.asarray(s), np.linalg.svd(a, compute_uv=False)[1:3],
                               rtol=1e-10)
    # Rank one: u is re-orthonormalized by QR.
    a = np.outer(rng.standard_normal(5), rng.standard_normal(4))
    s, u, vh = (np.asarray(o) for o in svd(a))
    _check_svd(a, s, u, vh)
    a[0, 0] = np.nan
    assert all(np.isnan(np.asarray(o)).all() for o in svd(a))


def test_tpu_svd_targets():
  body = "lambda a: lax.linalg.svd(a)"
  if _tpu_qr_missing():
    with pytest.raises(NotImplementedError, match="geqrf"):
      _targets("tpu", body, (5, 3), "float32")
  else:
    assert set(_targets("tpu", body, (5, 3), "float32")) == {
        "Qr", "ProductOfElementaryHouseholderReflectors", "Eigh"}
  with pytest.raises(NotImplementedError, match="POLAR"):
    _targets("tpu", "lambda a: lax.linalg.svd(a, algorithm=lax.linalg.SvdAlgorithm.QR)",
             (3, 3), "float32")
