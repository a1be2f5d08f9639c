"""hlox.scipy's small namespaces (ndimage, cluster.vq, interpolate, spatial.transform,
sparse.linalg) against SciPy/NumPy and JAX, with jit, vmap and gradients."""
import importlib.util

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.config import enable_x64
from hlox.scipy import interpolate, ndimage
from hlox.scipy.cluster import vq
from hlox.scipy.sparse import linalg as sla
from hlox.scipy.spatial.transform import Rotation, Slerp

from tests.check_grads import check_grads
from tests.util import check_against_jax_modules

scipy = pytest.importorskip("scipy")
from scipy import ndimage as sndimage  # noqa: E402
from scipy.cluster import vq as svq  # noqa: E402
from scipy.interpolate import RegularGridInterpolator as SRGI  # noqa: E402
from scipy.spatial.transform import Rotation as SRotation, Slerp as SSlerp  # noqa: E402

# JAX's 'constant' and 'wrap' are SciPy's 'grid-constant' and 'grid-wrap'.
SCIPY_MODE = {"constant": "grid-constant", "nearest": "nearest", "wrap": "grid-wrap",
              "mirror": "mirror", "reflect": "reflect"}


@pytest.mark.parametrize("mode", sorted(SCIPY_MODE))
@pytest.mark.parametrize("order", [0, 1])
def test_map_coordinates_matches_scipy(mode, order):
  rng = np.random.default_rng(0)
  x = rng.standard_normal((5, 7))
  coords = [rng.uniform(-3, 8, (4, 3)), rng.uniform(-3, 10, (4, 3))]
  # Keep order-0 coordinates off the .5 ties (where rounding conventions differ).
  coords = [np.where(np.abs(c % 1 - 0.5) < 0.05, c + 0.1, c) for c in coords]
  with enable_x64():
    got = ndimage.map_coordinates(x, coords, order, mode=mode, cval=1.5)
  want = sndimage.map_coordinates(x, np.stack(coords), order=order, mode=SCIPY_MODE[mode],
                                  cval=1.5)
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def test_map_coordinates_int_jit_vmap_grad_and_errors():
  img = np.arange(12).reshape(3, 4)
  c = [np.array([0.5, 1.2]), np.array([1.5, 2.7])]
  got = ndimage.map_coordinates(img, c, 1)
  assert got.dtype == np.int32
  np.testing.assert_array_equal(np.asarray(got), [4, 8])  # 3.5 and 7.5, rounded half away from 0
  x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  f = lambda x, c0: ndimage.map_coordinates(x, [c0, c[1]], 1, mode="reflect")
  np.testing.assert_allclose(np.asarray(hlox.jit(f)(x, c[0])), np.asarray(f(x, c[0])))
  cs = np.array([[0.5, 1.2], [2.1, -0.4]], np.float32)
  np.testing.assert_allclose(np.asarray(hlox.vmap(f, (None, 0))(x, cs)),
                             np.stack([np.asarray(f(x, ci)) for ci in cs]), rtol=1e-6)
  with enable_x64():
    check_grads(lambda x, c0: ndimage.map_coordinates(x, [c0, c[1] + 0.1], 1),
                (np.arange(12.0).reshape(3, 4), np.array([0.3, 1.2])), order=1)
  with pytest.raises(ValueError, match="length input.ndim"):
    ndimage.map_coordinates(x, c[:1], 1)
  with pytest.raises(NotImplementedError, match="order<=1"):
    ndimage.map_coordinates(x, c, 3)
  with pytest.raises(NotImplementedError, match="mode"):
    ndimage.map_coordinates(x, c, 1, mode="grid-mirror")


def test_vq_matches_scipy():
  rng = np.random.default_rng(1)
  obs, book = rng.standard_normal((9, 3)), rng.standard_normal((4, 3))
  with enable_x64():
    code, dist = vq.vq(obs, book)
    code1, dist1 = vq.vq(obs[:, 0], book[:, 0])
  want_code, want_dist = svq.vq(obs, book)
  np.testing.assert_array_equal(np.asarray(code), want_code)
  np.testing.assert_allclose(np.asarray(dist), want_dist, rtol=1e-12)
  np.testing.assert_array_equal(np.asarray(code1), svq.vq(obs[:, 0], book[:, 0])[0])
  np.testing.assert_allclose(np.asarray(dist1), svq.vq(obs[:, 0], book[:, 0])[1], rtol=1e-12)
  jc, jd = hlox.jit(vq.vq)(obs.astype(np.float32), book.astype(np.float32))
  np.testing.assert_array_equal(np.asarray(jc), want_code)
  with pytest.raises(ValueError, match="same rank"):
    vq.vq(obs, book[0])


@pytest.mark.parametrize("method", ["linear", "nearest"])
def test_regular_grid_interpolator_matches_scipy(method):
  rng = np.random.default_rng(2)
  grid = (np.array([0., 1., 2.5, 4.]), np.linspace(-1, 1, 5))
  values = rng.standard_normal((4, 5, 2))
  pts = np.stack([rng.uniform(-0.5, 4.5, 10), rng.uniform(-1.2, 1.2, 10)], -1)
  want = SRGI(grid, values, method=method, bounds_error=False)(pts)
  want_extrap = SRGI(grid, values, method=method, bounds_error=False, fill_value=None)(pts)
  with enable_x64():
    got = interpolate.RegularGridInterpolator(grid, values, method=method)(pts)
    got_extrap = interpolate.RegularGridInterpolator(grid, values, method=method,
                                                     fill_value=None)(pts)
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, equal_nan=True)
  np.testing.assert_allclose(np.asarray(got_extrap), want_extrap, rtol=1e-12)


@pytest.mark.slow  # eager op-by-op compiles dominate
def test_regular_grid_interpolator_transforms_and_errors():
  grid = (np.arange(4.0, dtype=np.float32), np.arange(3.0, dtype=np.float32))
  values = np.arange(12.0, dtype=np.float32).reshape(4, 3)
  interp = interpolate.RegularGridInterpolator(grid, values)
  pts = np.array([[0.5, 0.5], [2.2, 1.9]], np.float32)
  # A pytree: it goes through jit as an argument.
  np.testing.assert_allclose(np.asarray(hlox.jit(lambda i, p: i(p))(interp, pts)),
                             np.asarray(interp(pts)), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(hlox.vmap(interp)(pts[:, None])[:, 0]),
                             np.asarray(interp(pts)), rtol=1e-6)
  g = hlox.grad(lambda p: interp(p[None])[0])(jnp.array([1.3, 0.4]))
  np.testing.assert_allclose(np.asarray(g), [3.0, 1.0], rtol=1e-6)  # values = 3 i + j
  with pytest.raises(ValueError, match="not defined"):
    interpolate.RegularGridInterpolator(grid, values, method="cubic")
  with pytest.raises(NotImplementedError, match="bounds_error"):
    interpolate.RegularGridInterpolator(grid, values, bounds_error=True)
  with pytest.raises(ValueError, match="dimension"):
    interp(np.ones((2, 3)))


def _quats(n, seed=3):
  return np.random.default_rng(seed).standard_normal((n, 4))


def test_rotation_matches_scipy():
  q = _quats(6)
  v = np.random.default_rng(4).standard_normal((6, 3))
  s = SRotation.from_quat(q)
  with enable_x64():
    r = Rotation.from_quat(q)
    checks = {
        "matrix": (r.as_matrix(), s.as_matrix()),
        "rotvec": (r.as_rotvec(), s.as_rotvec()),
        "rotvec_deg": (r.as_rotvec(degrees=True), s.as_rotvec(degrees=True)),
        "mrp": (r.as_mrp(), s.as_mrp()),
        "canonical": (r.as_quat(canonical=True), s.as_quat(canonical=True)),
        "scalar_first": (r.as_quat(scalar_first=True), s.as_quat(scalar_first=True)),
        "magnitude": (r.magnitude(), s.magnitude()),
        "apply": (r.apply(v), s.apply(v)),
        "apply_inv": (r.apply(v, inverse=True), s.apply(v, inverse=True)),
        "compose": ((r * r[::-1]).as_matrix(), (s * s[::-1]).as_matrix()),
        "inv": (r.inv().as_matrix(), s.inv().as_matrix()),
        "mean": (r.mean().as_matrix(), s.mean().as_matrix()),
        "mean_w": (r.mean(np.arange(1.0, 7.0)).as_matrix(),
                   s.mean(np.arange(1.0, 7.0)).as_matrix()),
        "from_matrix": (Rotation.from_matrix(s.as_matrix()).as_matrix(), s.as_matrix()),
        "from_rotvec": (Rotation.from_rotvec(s.as_rotvec()).as_matrix(), s.as_matrix()),
        "from_mrp": (Rotation.from_mrp(s.as_mrp()).as_matrix(), s.as_matrix()),
        "concat": (Rotation.concatenate([r[:2], r[4:]]).as_matrix(),
                   SRotation.concatenate([s[:2], s[4:]]).as_matrix()),
    }
    for seq in ("xyz", "ZYX", "zxz", "YXY"):
      checks[f"euler_{seq}"] = (r.as_euler(seq), s.as_euler(seq))
      angles = s.as_euler(seq, degrees=True)
      checks[f"from_euler_{seq}"] = (Rotation.from_euler(seq, angles, degrees=True).as_matrix(),
                                     s.as_matrix())
    checks["from_euler_2"] = (Rotation.from_euler("xy", np.array([0.3, 1.1])).as_matrix(),
                              SRotation.from_euler("xy", np.array([0.3, 1.1])).as_matrix())
  for name, (got, want) in checks.items():
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9, atol=1e-12, err_msg=name)
  # Gimbal lock: the degenerate branches.
  lock = SRotation.from_euler("xyz", [0.4, np.pi / 2, 0.0])
  with enable_x64():
    got = Rotation.from_quat(lock.as_quat()).as_euler("xyz")
  np.testing.assert_allclose(np.asarray(Rotation.from_euler("xyz", got).as_matrix()),
                             lock.as_matrix(), atol=1e-6)


def test_slerp_matches_scipy():
  q = _quats(4, seed=5)
  times = np.array([0.0, 1.0, 2.5, 4.0])
  t = np.array([0.0, 0.4, 1.0, 2.0, 3.9, 4.0])
  want = SSlerp(times, SRotation.from_quat(q))(t).as_matrix()
  with enable_x64():
    slerp = Slerp.init(times, Rotation.from_quat(q))
    got = slerp(t).as_matrix()
    one = slerp(1.7)
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-9, atol=1e-12)
  assert one.single
  np.testing.assert_allclose(np.asarray(one.as_matrix()),
                             SSlerp(times, SRotation.from_quat(q))(1.7).as_matrix(), atol=1e-12)


@pytest.mark.slow  # eager op-by-op compiles dominate
def test_rotation_transforms_and_errors():
  q = _quats(5).astype(np.float32)
  f = lambda q: Rotation.from_quat(q).as_euler("xyz")
  np.testing.assert_allclose(np.asarray(hlox.jit(f)(q)), np.asarray(f(q)), rtol=1e-5,
                             atol=1e-6)
  np.testing.assert_allclose(np.asarray(hlox.vmap(f)(q)), np.asarray(f(q)), rtol=1e-5,
                             atol=1e-6)
  out = hlox.jit(lambda r: r.inv())(Rotation.from_quat(q))  # a pytree
  assert isinstance(out, Rotation)
  with enable_x64():
    check_grads(lambda v: Rotation.from_rotvec(v).apply(np.array([1.0, 2.0, 3.0])),
                (np.array([0.3, -0.2, 0.5]),), order=2)
  with pytest.raises(ValueError, match="consecutive"):
    Rotation.from_euler("xxy", np.array([1.0, 2.0, 3.0]))
  with pytest.raises(ValueError, match="Expected 3 axes"):
    Rotation.from_quat(q).as_euler("xy")
  with pytest.raises(TypeError, match="not subscriptable"):
    Rotation.from_quat(q[0])[0]
  with pytest.raises(ValueError, match="at least 2"):
    Slerp.init([0.0], Rotation.from_quat(q[:1]))


def _spd(n, seed=6):
  a = np.random.default_rng(seed).standard_normal((n, n))
  return a @ a.T + n * np.eye(n)


@pytest.mark.parametrize("solver", ["cg", "bicgstab", "gmres", pytest.param("gmres_incremental", marks=pytest.mark.slow)])
def test_sparse_solvers_match_numpy(solver):
  rng = np.random.default_rng(7)
  A = _spd(6) if solver == "cg" else _spd(6) + 2 * rng.standard_normal((6, 6))
  b = rng.standard_normal(6)
  fn = {"cg": sla.cg, "bicgstab": sla.bicgstab, "gmres": sla.gmres,
        "gmres_incremental": lambda *a, **k: sla.gmres(*a, solve_method="incremental", **k)
        }[solver]
  with enable_x64():
    x, _ = fn(A, b, tol=1e-12)
    # The operator as a function on a pytree, and a preconditioner.
    xt, _ = fn(lambda t: {"a": A @ t["a"]}, {"a": b}, tol=1e-12,
               M=lambda t: {"a": t["a"] / np.diag(A)})
    g = hlox.grad(lambda b: jnp.sum(fn(A, b, tol=1e-12)[0] ** 2))(b)
  want = np.linalg.solve(A, b)
  np.testing.assert_allclose(np.asarray(x), want, rtol=1e-8, atol=1e-10)
  np.testing.assert_allclose(np.asarray(xt["a"]), want, rtol=1e-8, atol=1e-10)
  np.testing.assert_allclose(np.asarray(g), 2 * np.linalg.solve(A.T, want), rtol=1e-7,
                             atol=1e-9)


def test_sparse_solvers_jit_vmap_and_errors():
  A = _spd(4).astype(np.float32)
  bs = np.random.default_rng(8).standard_normal((3, 4)).astype(np.float32)
  solve = lambda b: sla.cg(A, b)[0]
  got = hlox.vmap(hlox.jit(solve))(bs)
  np.testing.assert_allclose(np.asarray(got), np.linalg.solve(A, bs.T).T, rtol=1e-4,
                             atol=1e-5)
  x, info = hlox.jit(lambda b: sla.gmres(A, b))(bs[0])
  assert int(info) == 0
  with pytest.raises(ValueError, match="square matrix"):
    sla.cg(np.ones((3, 4), np.float32), bs[0])
  with pytest.raises(ValueError, match="matching"):
    sla.bicgstab(A, bs[0], x0=np.zeros(3, np.float32))
  with pytest.raises(ValueError, match="solve_method"):
    sla.gmres(A, bs[0], solve_method="bogus")


ORACLE = {
    "map_coordinates": ("scipy.ndimage", "return m.map_coordinates(np.arange(12.0)"
                        ".reshape(3, 4), [np.array([0.5, -1.2, 2.7]), np.array([1.5, 3.3, "
                        "-0.4])], 1, mode='mirror')"),
    "vq": ("scipy.cluster.vq", "return m.vq(np.arange(12.0).reshape(4, 3) ** 0.5, "
           "np.eye(3))"),
    "rgi": ("scipy.interpolate", "return m.RegularGridInterpolator((np.arange(3.0), "
            "np.arange(4.0)), np.arange(12.0).reshape(3, 4) ** 2)(np.array([[0.5, 1.2], "
            "[2.5, 0.1], [-1.0, 1.0]]))"),
    "rotation": ("scipy.spatial.transform", "r = m.Rotation.from_quat(np.array([[0.1, 0.2, "
                 "-0.3, 0.9], [0.5, -0.5, 0.5, 0.1]])); return (r.as_euler('zyx'), "
                 "r.as_rotvec(), m.Slerp.init(np.array([0.0, 1.0]), r)(0.3).as_quat())"),
    "cg": ("scipy.sparse.linalg", "a = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.5], "
           "[0.0, 0.5, 2.0]]); return m.cg(a, np.array([1.0, 2.0, 3.0]), maxiter=2)[0]"),
    "bicgstab": ("scipy.sparse.linalg", "a = np.array([[4.0, 1.0, 0.0], [-1.0, 3.0, 0.5],"
                 " [0.0, 0.5, 2.0]]); return m.bicgstab(a, np.array([1.0, 2.0, 3.0]), "
                 "maxiter=1)[0]"),
    "gmres": ("scipy.sparse.linalg", "a = np.array([[4.0, 1.0, 0.0], [-1.0, 3.0, 0.5], "
              "[0.0, 0.5, 2.0]]); return m.gmres(a, np.array([1.0, 2.0, 3.0]), restart=2, "
              "maxiter=1)"),
}


@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="jax (the test oracle) is not installed")
@pytest.mark.jax_oracle
@pytest.mark.slow  # one JAX subprocess compiling every program: 30-45 s
def test_matches_jax():
  check_against_jax_modules(ORACLE, rtol=1e-5, atol=1e-6)
