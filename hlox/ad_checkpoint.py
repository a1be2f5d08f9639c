"""``jax.ad_checkpoint``: ``checkpoint`` (``remat``), its policies, ``checkpoint_name``, and
``saved_residuals`` / ``print_saved_residuals``, which say what reverse-mode autodiff keeps
from the forward pass (the values a ``checkpoint`` policy decides about)."""
from __future__ import annotations

from typing import Callable

from hlox import _tree_transform as tree_util
from hlox.api import _argument_paths, make_jaxpr
from hlox.autodiff import vjp
from hlox.checkpoint import (Offloadable, Recompute, Saveable, checkpoint, checkpoint_name,
                             checkpoint_policies, describe_residuals, name_p, remat)

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "remat", "name_p",
           "Saveable", "Recompute", "Offloadable", "saved_residuals",
           "print_saved_residuals"]


def saved_residuals(f: Callable, *args, **kwargs) -> list:
  """The residuals ``vjp(f, *args, **kwargs)`` saves for the backward pass, as
  ``(aval, where it comes from)`` pairs: an argument by its name, a constant, or the
  equation that computes it (its primitive, or the name given by ``checkpoint_name``, and
  the user's line)."""
  leaves, tree = tree_util.tree_flatten((args, kwargs))

  def flat_f(*leaves):
    args, kwargs = tree_util.tree_unflatten(tree, leaves)
    return f(*args, **kwargs)

  closed, shapes = make_jaxpr(lambda *xs: vjp(flat_f, *xs), return_shape=True)(*leaves)
  jaxpr = closed.jaxpr
  num_res = len(tree_util.tree_leaves(shapes[1]))
  residuals = jaxpr.outvars[len(jaxpr.outvars) - num_res:]
  return describe_residuals(jaxpr, residuals, _argument_paths(f, args, kwargs, (), ()))


def print_saved_residuals(f: Callable, *args, **kwargs) -> None:
  """Print one line per residual ``saved_residuals`` finds: its type and its source."""
  for aval, where in saved_residuals(f, *args, **kwargs):
    print(f"{aval.str_short(short_dtypes=True)} {where}")
