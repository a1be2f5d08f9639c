"""``hlox.experimental.mesh_utils`` (JAX's ``jax.experimental.mesh_utils``): device grids for
``Mesh``. On the CPU every order is as good as any: devices are laid out in their order."""
from __future__ import annotations

import math

import numpy as np

from hlox.runtime import client

__all__ = ["create_device_mesh"]


def create_device_mesh(mesh_shape, devices=None, *, contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False):
  """An array of shape ``mesh_shape`` of ``devices`` (default: every device), for
  ``Mesh(create_device_mesh((4, 2)), ('x', 'y'))``."""
  del contiguous_submeshes, allow_split_physical_axes
  devices = list(devices) if devices is not None else client.devices()
  shape = tuple(int(s) for s in mesh_shape)
  if math.prod(shape) != len(devices):
    raise ValueError(f"Number of devices {len(devices)} must equal the product of mesh_shape "
                     f"{shape}")
  grid = np.empty(len(devices), dtype=object)
  grid[:] = devices
  return grid.reshape(shape)
