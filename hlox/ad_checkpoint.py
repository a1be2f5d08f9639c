"""``jax.ad_checkpoint``: ``checkpoint`` (``remat``), its policies, ``checkpoint_name``, and
``saved_residuals`` / ``print_saved_residuals``, which say what reverse-mode autodiff keeps
from the forward pass (the values a ``checkpoint`` policy decides about)."""
from __future__ import annotations

from typing import Callable

from hlox import _tree_transform as tree_util
from hlox.api import _argument_paths, make_jaxpr
from hlox.autodiff import vjp
from hlox.checkpoint import (Offloadable, Recompute, Saveable, checkpoint, checkpoint_name,
                             checkpoint_policies, name_p, remat)
from hlox.core.jaxpr import Literal
from hlox.lax.call import jit_p
from hlox.lax.elementwise import reduce_precision_p

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
  return _describe(jaxpr, residuals, _argument_paths(f, args, kwargs, (), ()))


def _describe(jaxpr, residuals, arg_names) -> list:
  # A reduce_precision is not the producer worth naming: look through it to its operand.
  through = {e.outvars[0]: e.invars[0] for e in jaxpr.eqns
             if e.primitive is reduce_precision_p}
  wanted = {through.get(v, v) for v in residuals if not isinstance(v, Literal)}
  found = [(v.aval, "from a literal") for v in residuals if isinstance(v, Literal)]
  found += [(v.aval, "from a constant") for v in jaxpr.constvars if v in wanted]
  found += [(v.aval, f"from the argument {name}" if name else
             f"from the argument at flattened index {i}")
            for i, (v, name) in enumerate(zip(jaxpr.invars, arg_names)) if v in wanted]
  for eqn in jaxpr.eqns:
    for v in eqn.outvars:
      if v not in wanted:
        continue
      where = eqn.source_info or "unknown"
      if eqn.primitive is name_p:
        found.append((v.aval, f"named '{eqn.params['name']}' from {where}"))
      elif eqn.primitive is jit_p:
        found.append((v.aval, f"output of jitted function '{eqn.params['name']}' from "
                              f"{where}"))
      else:
        found.append((v.aval, f"output of {eqn.primitive.name} from {where}"))
  return found


def print_saved_residuals(f: Callable, *args, **kwargs) -> None:
  """Print one line per residual ``saved_residuals`` finds: its type and its source."""
  for aval, where in saved_residuals(f, *args, **kwargs):
    print(f"{aval.str_short(short_dtypes=True)} {where}")
