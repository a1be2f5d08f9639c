"""``Rotation`` and ``Slerp`` (``jax.scipy.spatial.transform``), on unit quaternions.

A ``Rotation`` holds quaternions ``(x, y, z, w)`` (scalar last), one (shape ``(4,)``) or a
stack (``(n, 4)``); it is a NamedTuple, hence a pytree that passes through ``jit``/``vmap``.
The per-quaternion formulas are written for one rotation and vectorized over stacks with
``hlox.numpy.vectorize``; they follow SciPy's (and JAX's) conventions and branch choices.
"""
from __future__ import annotations

import functools
import re
import typing

import numpy as np

from hlox import numpy as jnp

__all__ = ["Rotation", "Slerp"]

_vectorize = jnp.vectorize


def _axis_index(axis: str) -> int:
  if axis not in "xyz" or len(axis) != 1:
    raise ValueError(f"Expected axis to be from ['x', 'y', 'z'], got {axis}")
  return "xyz".index(axis)


def _check_seq(seq: str, max_len: int, exact: bool):
  """(intrinsic, axes) of an Euler sequence such as 'xyz' (extrinsic) or 'ZXZ' (intrinsic)."""
  if exact and len(seq) != 3:
    raise ValueError(f"Expected 3 axes, got {seq}.")
  if not 1 <= len(seq) <= max_len:
    raise ValueError("Expected axis specification to be a non-empty string of upto 3 "
                     f"characters, got {seq}")
  intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
  extrinsic = re.match(r"^[xyz]{1,3}$", seq) is not None
  if not (intrinsic or extrinsic):
    raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] or ['X', 'Y', "
                     f"'Z'], got {seq}")
  if any(seq[i] == seq[i + 1] for i in range(len(seq) - 1)):
    raise ValueError(f"Expected consecutive axes to be different, got {seq}")
  return intrinsic, tuple(_axis_index(a) for a in seq.lower())


class Rotation(typing.NamedTuple):
  """Rotations in 3 dimensions, stored as unit quaternions ``quat`` (scalar last)."""
  quat: typing.Any

  @classmethod
  def concatenate(cls, rotations: typing.Sequence):
    """One stack of all the rotations in ``rotations``."""
    return cls(jnp.concatenate([r.quat for r in rotations]))

  @classmethod
  def from_euler(cls, seq: str, angles, degrees: bool = False):
    """Rotations from Euler angles about the axes ``seq`` (lower case: extrinsic, upper
    case: intrinsic; up to 3 axes), angles in the last dimension of ``angles``."""
    intrinsic, axes = _check_seq(seq, 3, exact=False)
    angles = jnp.atleast_1d(angles)
    return cls(_from_euler(angles, axes, intrinsic, degrees))

  @classmethod
  def from_matrix(cls, matrix):
    """Rotations from (stacks of) 3x3 rotation matrices."""
    return cls(_from_matrix(jnp.asarray(matrix)))

  @classmethod
  def from_mrp(cls, mrp):
    """Rotations from modified Rodrigues parameters (3-vectors)."""
    return cls(_from_mrp(jnp.asarray(mrp)))

  @classmethod
  def from_quat(cls, quat):
    """Rotations from quaternions ``(x, y, z, w)``, normalized to unit length."""
    return cls(_normalize(jnp.asarray(quat)))

  @classmethod
  def from_rotvec(cls, rotvec, degrees: bool = False):
    """Rotations from rotation vectors (axis times angle)."""
    return cls(_from_rotvec(jnp.asarray(rotvec), degrees))

  @classmethod
  def identity(cls, num: int | None = None, dtype=float):
    """The identity rotation (only a single one: ``num`` must be None, as in JAX)."""
    if num is not None:
      raise ValueError(f"Rotation.identity: only num=None is supported, got {num}")
    return cls(jnp.array([0., 0., 0., 1.], dtype=dtype))

  @classmethod
  def random(cls, random_key, num: int | None = None):
    """Not implemented, as in JAX (draw quaternions with ``hlox.random`` and
    ``from_quat`` instead)."""
    raise NotImplementedError("Rotation.random is not implemented (as in JAX); use "
                              "Rotation.from_quat(hlox.random.normal(key, (n, 4)))")

  def __getitem__(self, indexer):
    if self.single:
      raise TypeError("Single rotation is not subscriptable.")
    return Rotation(self.quat[indexer])

  def __len__(self):
    if self.single:
      raise TypeError("Single rotation has no len().")
    return self.quat.shape[0]

  def __mul__(self, other) -> "Rotation":
    """The composition: ``(p * q).apply(v) == p.apply(q.apply(v))``."""
    return Rotation.from_quat(_compose(self.quat, other.quat))

  def apply(self, vectors, inverse: bool = False):
    """The rotated 3-vectors (by the inverse rotation when ``inverse``)."""
    return _apply(self.as_matrix(), jnp.asarray(vectors), inverse)

  def as_euler(self, seq: str, degrees: bool = False):
    """Euler angles about the 3 axes ``seq`` (lower case extrinsic, upper case intrinsic),
    in ``[-pi, pi)``."""
    intrinsic, axes = _check_seq(seq, 3, exact=True)
    return _as_euler(self.quat, axes, not intrinsic, degrees)

  def as_matrix(self):
    """The 3x3 rotation matrices."""
    return _as_matrix(self.quat)

  def as_mrp(self):
    """Modified Rodrigues parameters (of the quaternion with ``w >= 0``)."""
    return _as_mrp(self.quat)

  def as_rotvec(self, degrees: bool = False):
    """Rotation vectors (axis times angle, angle in ``[0, pi]``)."""
    return _as_rotvec(self.quat, degrees)

  def as_quat(self, canonical: bool = False, scalar_first: bool = False):
    """The quaternions; ``canonical`` picks the sign with ``w > 0`` (or the first nonzero
    of ``x, y, z`` positive when ``w == 0``); ``scalar_first`` gives ``(w, x, y, z)``."""
    quat = _canonical(self.quat) if canonical else self.quat
    return jnp.roll(quat, shift=1, axis=-1) if scalar_first else quat

  def inv(self):
    """The inverse rotations."""
    return Rotation(_inv(self.quat))

  def magnitude(self):
    """The rotation angles, in ``[0, pi]``."""
    return _magnitude(self.quat)

  def mean(self, weights=None):
    """The (weighted) mean rotation of a stack: the eigenvector of the largest eigenvalue
    of ``sum_i w_i q_i q_i^T`` (Markley et al.)."""
    w = (jnp.ones(self.quat.shape[0], dtype=self.quat.dtype) if weights is None
         else jnp.asarray(weights, dtype=self.quat.dtype))
    if w.ndim != 1:
      raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
    if w.shape[0] != len(self):
      raise ValueError("Expected `weights` to have number of values equal to number of "
                       f"rotations, got {w.shape[0]} values and {len(self)} rotations.")
    K = jnp.dot(w[None, :] * self.quat.T, self.quat)
    return Rotation(jnp.linalg.eigh(K)[1][:, -1])

  @property
  def single(self) -> bool:
    """Whether this is one rotation (not a stack)."""
    return self.quat.ndim == 1


class Slerp(typing.NamedTuple):
  """Spherical linear interpolation between rotations at increasing ``times`` (make one
  with ``Slerp.init(times, rotations)``; call it with the times to interpolate at)."""
  times: typing.Any
  timedelta: typing.Any
  rotations: Rotation
  rotvecs: typing.Any

  @classmethod
  def init(cls, times, rotations: Rotation):
    """The interpolator through ``rotations`` (a stack of at least 2) at ``times``."""
    if not isinstance(rotations, Rotation):
      raise TypeError("Slerp.init: `rotations` must be a `Rotation` instance.")
    if rotations.single or len(rotations) == 1:
      raise ValueError("Slerp.init: `rotations` must be a sequence of at least 2 rotations.")
    times = jnp.asarray(times, dtype=rotations.quat.dtype)
    if times.ndim != 1:
      raise ValueError("Expected times to be specified in a 1 dimensional array, got "
                       f"{times.ndim} dimensions.")
    if times.shape[0] != len(rotations):
      raise ValueError("Expected number of rotations to be equal to number of timestamps "
                       f"given, got {len(rotations)} rotations and {times.shape[0]} "
                       "timestamps.")
    starts = Rotation(rotations.as_quat()[:-1])
    # Each segment as the rotation vector taking its start to its end.
    rotvecs = (starts.inv() * Rotation(rotations.as_quat()[1:])).as_rotvec()
    return cls(times=times, timedelta=jnp.diff(times), rotations=starts, rotvecs=rotvecs)

  def __call__(self, times):
    """The interpolated rotations at ``times`` (a scalar gives a single rotation)."""
    t = jnp.asarray(times, dtype=self.times.dtype)
    if t.ndim > 1:
      raise ValueError("`times` must be at most 1-dimensional.")
    single = t.ndim == 0
    t = jnp.atleast_1d(t)
    ind = jnp.maximum(jnp.searchsorted(self.times, t) - 1, 0)
    alpha = (t - self.times[ind]) / self.timedelta[ind]
    result = self.rotations[ind] * Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
    return result[0] if single else result


# --- the formulas, for one quaternion (vectorized over stacks) -----------------------------

@functools.partial(_vectorize, signature="(n)->()")
def _norm(v):
  return jnp.sqrt(jnp.dot(v, v))


@functools.partial(_vectorize, signature="(n)->(n)")
def _normalize(quat):
  return quat / _norm(quat)


@functools.partial(_vectorize, signature="(n)->(n)")
def _inv(quat):
  return quat * jnp.array([-1, -1, -1, 1], dtype=quat.dtype)


@functools.partial(_vectorize, signature="(n)->()")
def _magnitude(quat):
  return 2. * jnp.arctan2(_norm(quat[:3]), jnp.abs(quat[3]))


@functools.partial(_vectorize, signature="(n),(n)->(n)")
def _compose(p, q):
  cross = jnp.cross(p[:3], q[:3])
  return jnp.array([p[3] * q[0] + q[3] * p[0] + cross[0],
                    p[3] * q[1] + q[3] * p[1] + cross[1],
                    p[3] * q[2] + q[3] * p[2] + cross[2],
                    p[3] * q[3] - p[0] * q[0] - p[1] * q[1] - p[2] * q[2]])


def _apply(matrix, vectors, inverse):
  if vectors.shape[-1:] != (3,):
    raise ValueError(f"Rotation.apply: expected vectors of shape (..., 3), got "
                     f"{vectors.shape}")
  matrix = jnp.swapaxes(matrix, -1, -2) if inverse else matrix
  return _matvec(matrix, vectors)


@functools.partial(_vectorize, signature="(m,m),(m)->(m)")
def _matvec(matrix, vector):
  return matrix @ vector


@functools.partial(_vectorize, signature="(m)->(n,n)")
def _as_matrix(quat):
  x, y, z, w = quat[0], quat[1], quat[2], quat[3]
  x2, y2, z2, w2 = x * x, y * y, z * z, w * w
  xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
  return jnp.array([[x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
                    [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
                    [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2]])


@functools.partial(_vectorize, signature="(m)->(n)")
def _as_mrp(quat):
  sign = jnp.where(quat[3] < 0, -1., 1.)
  return sign * quat[:3] / (1. + sign * quat[3])


@functools.partial(_vectorize, signature="(m)->(n)")
def _from_mrp(mrp):
  s = jnp.dot(mrp, mrp) + 1
  return jnp.hstack([2 * mrp[:3], 2 - s]) / s


def _as_rotvec(quat, degrees):
  return _as_rotvec_one(quat, degrees=degrees)


@functools.partial(_vectorize, signature="(m)->(n)", excluded=frozenset({"degrees"}))
def _as_rotvec_one(quat, degrees=False):
  quat = jnp.where(quat[3] < 0, -quat, quat)  # w >= 0, so the angle is in [0, pi]
  angle = 2. * jnp.arctan2(_norm(quat[:3]), quat[3])
  angle2 = angle * angle
  # angle / sin(angle / 2), by its Taylor series near 0.
  small = 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880
  scale = jnp.where(angle <= 1e-3, small, angle / jnp.sin(angle / 2))
  if degrees:
    scale = jnp.rad2deg(scale)
  return scale * quat[:3]


def _from_rotvec(rotvec, degrees):
  return _from_rotvec_one(rotvec, degrees=degrees)


@functools.partial(_vectorize, signature="(m)->(n)", excluded=frozenset({"degrees"}))
def _from_rotvec_one(rotvec, degrees=False):
  if degrees:
    rotvec = jnp.deg2rad(rotvec)
  angle = _norm(rotvec)
  angle2 = angle * angle
  small = 0.5 - angle2 / 48 + angle2 * angle2 / 3840  # sin(angle / 2) / angle near 0
  scale = jnp.where(angle <= 1e-3, small, jnp.sin(angle / 2) / angle)
  return jnp.hstack([scale * rotvec, jnp.cos(angle / 2)])


@functools.partial(_vectorize, signature="(m,m)->(n)")
def _from_matrix(matrix):
  # Shepperd's method: build the quaternion from the largest of the diagonal and the trace,
  # which keeps the division well conditioned.
  trace = matrix[0, 0] + matrix[1, 1] + matrix[2, 2]
  decision = jnp.array([matrix[0, 0], matrix[1, 1], matrix[2, 2], trace], dtype=matrix.dtype)
  i = jnp.argmax(decision)
  j = (i + 1) % 3
  k = (j + 1) % 3
  from_diag = jnp.zeros(4, dtype=matrix.dtype)
  from_diag = from_diag.at[i].set(1 - decision[3] + 2 * matrix[i, i])
  from_diag = from_diag.at[j].set(matrix[j, i] + matrix[i, j])
  from_diag = from_diag.at[k].set(matrix[k, i] + matrix[i, k])
  from_diag = from_diag.at[3].set(matrix[k, j] - matrix[j, k])
  from_trace = jnp.array([matrix[2, 1] - matrix[1, 2], matrix[0, 2] - matrix[2, 0],
                          matrix[1, 0] - matrix[0, 1], 1 + decision[3]])
  return _normalize(jnp.where(i != 3, from_diag, from_trace))


def _elementary(axis: int, angle):
  quat = jnp.zeros(angle.shape + (4,), dtype=angle.dtype)
  return quat.at[..., 3].set(jnp.cos(angle / 2.)).at[..., axis].set(jnp.sin(angle / 2.))


def _from_euler(angles, axes, intrinsic, degrees):
  if angles.shape[-1] != len(axes):
    raise ValueError(f"Rotation.from_euler: expected {len(axes)} angles in the last "
                     f"dimension, got shape {angles.shape}")
  if degrees:
    angles = jnp.deg2rad(angles)
  result = _elementary(axes[0], angles[..., 0])
  for n in range(1, len(axes)):
    quat = _elementary(axes[n], angles[..., n])
    result = _compose(result, quat) if intrinsic else _compose(quat, result)
  return result


def _as_euler(quat, axes, extrinsic, degrees):
  # The quaternion method of Bernardes & Viollet (2022), as SciPy.
  first, third = (0, 2) if extrinsic else (2, 0)
  i, j, k = axes if extrinsic else axes[::-1]
  symmetric = i == k
  if symmetric:
    k = 3 - i - j
  sign = (i - j) * (j - k) * (k - i) // 2
  q = lambda n: quat[..., n]
  if symmetric:
    a, b, c, d = q(3), q(i), q(j), q(k) * sign
  else:
    a, b, c, d = q(3) - q(j), q(i) + q(k) * sign, q(j) + q(3), q(k) * sign - q(i)
  eps = 1e-7
  middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
  case = jnp.where(jnp.abs(middle - np.pi) <= eps, 2, 0)
  case = jnp.where(jnp.abs(middle) <= eps, 1, case)
  half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
  angles = [None, middle, None]
  # Degenerate cases (gimbal lock): the first angle takes the whole, the third is 0.
  degenerate = jnp.where(case == 1, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
  zero = jnp.zeros_like(middle)
  angles[0] = degenerate
  angles[2] = zero
  angles[first] = jnp.where(case == 0, half_sum - half_diff, angles[first])
  angles[third] = jnp.where(case == 0, half_sum + half_diff, angles[third])
  if not symmetric:
    angles[third] = angles[third] * sign
    angles[1] = angles[1] - np.pi / 2
  angles = jnp.stack(angles, axis=-1)
  angles = (angles + np.pi) % (2 * np.pi) - np.pi
  return jnp.rad2deg(angles) if degrees else angles


@functools.partial(_vectorize, signature="(n)->(n)")
def _canonical(quat):
  neg, zero = quat < 0, quat == 0
  flip = (neg[3] | (zero[3] & neg[0]) | (zero[3] & zero[0] & neg[1])
          | (zero[3] & zero[0] & zero[1] & neg[2]))
  return jnp.where(flip, -quat, quat)
