"""Solvers with implicit derivatives: ``custom_linear_solve`` and ``custom_root``.

``custom_linear_solve(matvec, b, solve)`` runs ``solve(matvec, b)`` but is differentiated as
the solution ``x`` of the linear system ``matvec(x) = b``: its JVP solves again for the
tangent, and its transpose solves the transposed system (with ``transpose_solve``, or
``solve`` itself when ``symmetric``), so no derivative ever goes through the iterations of
``solve``. It is one primitive, ``linear_solve_p`` (printed ``custom_linear_solve``), whose
parameters are the closed jaxprs of matvec, its transpose, solve and transpose_solve.

``custom_root(f, initial_guess, solve, tangent_solve)`` runs ``solve(f, initial_guess)`` and
is differentiated by the implicit function theorem at the root: the tangent of the solution
is ``-(df/dx)^-1 (df/dparams) params_dot``, with the inverse applied by ``tangent_solve``.
It is the primitive ``custom_root`` (JAX writes it with ``custom_jvp``, which sits above
``lax`` here).
"""
from __future__ import annotations

from functools import partial
from typing import Callable, NamedTuple

from hlox import _tree_transform as tree_util
from hlox.core.jaxpr import ClosedJaxpr, dce_jaxpr, eval_jaxpr
from hlox.core.primitive import Primitive
from hlox.core.tracer import get_aval
from hlox.core.traceback_util import api_boundary
from hlox.interpreters import ad, batching, xla
from hlox.lax import elementwise as _ew
from hlox.lax.control_flow import _batch_jaxpr, _cached_wrapper, _memo, _trace_fun

__all__ = ["custom_linear_solve", "custom_root", "linear_solve_p"]


class _LinearSolveTuple(NamedTuple):
  matvec: object
  vecmat: object
  solve: object
  transpose_solve: object

  def transpose(self):
    return type(self)(self.vecmat, self.matvec, self.transpose_solve, self.solve)


def _split_args(args, const_lengths):
  out, i = [], 0
  for n in const_lengths:
    out.append(list(args[i:i + n]))
    i += n
  return _LinearSolveTuple(*out), list(args[i:])


def _flatten(params):
  return [x for group in params for x in group]


def _check_tree(what, expected_name, tree, avals, expected_tree, expected_avals):
  """``what()``'s outputs must have the structure, shapes and dtypes of ``expected_name``
  (JAX's texts, which people search for)."""
  if tree != expected_tree:
    raise TypeError(f"{what}() output pytree structure must match {expected_name}, got "
                    f"{tree} and {expected_tree}.")
  shapes = [a.shape for a in avals]
  expected_shapes = [e.shape for e in expected_avals]
  if shapes != expected_shapes:
    raise ValueError(f"{what}() output shapes must match {expected_name}, got {shapes} and "
                     f"{expected_shapes}")
  for a, e in zip(avals, expected_avals):
    if a.dtype != e.dtype:
      raise TypeError(f"{what}() output dtypes must match {expected_name}, got "
                      f"{a.str_short()} for {e.str_short()}")


# --- linear_solve_p ----------------------------------------------------------------------

class _LinearSolvePrimitive(Primitive):
  multiple_results = True


linear_solve_p = _LinearSolvePrimitive("custom_linear_solve")


def _linear_solve_abstract_eval(*avals, const_lengths, jaxprs):
  # The solution has b's types, weak types included (however solve computed it); the
  # auxiliary outputs keep solve's.
  nb = len(avals) - sum(const_lengths)
  return list(avals[len(avals) - nb:]) + list(jaxprs.solve.out_avals[nb:])

linear_solve_p.def_abstract_eval(_linear_solve_abstract_eval)
linear_solve_p.def_impl(partial(xla.apply_primitive, linear_solve_p))


def _run(closed, consts, *args):
  return eval_jaxpr(closed.jaxpr, closed.consts, *consts, *args)


def _linear_solve_lowering(ctx, *args, const_lengths, jaxprs):
  params, b = _split_args(args, const_lengths)
  return xla.lower_call(ctx, jaxprs.solve, [*params.solve, *b], name="custom_linear_solve",
                        scope=ctx.module_context.scope)

xla.register_lowering(linear_solve_p, _linear_solve_lowering)


def _linear_solve_jvp(primals, tangents, *, const_lengths, jaxprs):
  # A x = b  =>  A x_dot = b_dot - A_dot x: one more solve, whatever solve's iterations were.
  outs = linear_solve_p.bind(*primals, const_lengths=const_lengths, jaxprs=jaxprs)
  params, _ = _split_args(primals, const_lengths)
  params_dot, b_dot = _split_args(tangents, const_lengths)
  nb = len(b_dot)
  x = outs[:nb]
  rhs = list(b_dot)
  if any(type(t) is not ad.Zero for t in params_dot.matvec):
    zeros = [ad.Zero.from_primal_value(v) for v in x]
    _, matvec_dot = ad.jvp(partial(_run, jaxprs.matvec, []), params.matvec + x,
                           params_dot.matvec + zeros)
    rhs = [_subtract(r, m) for r, m in zip(rhs, matvec_dot)]
  aux_zeros = [ad.Zero.from_primal_value(v) for v in outs[nb:]]
  if all(type(r) is ad.Zero for r in rhs):
    return outs, [ad.Zero.from_primal_value(v) for v in x] + aux_zeros
  rhs = [ad.instantiate_zeros(r) for r in rhs]
  x_dot = linear_solve_p.bind(*primals[:len(primals) - nb], *rhs,
                              const_lengths=const_lengths, jaxprs=jaxprs)
  return outs, list(x_dot[:nb]) + aux_zeros


def _subtract(r, m):
  if type(m) is ad.Zero:
    return r
  if type(r) is ad.Zero:
    return _ew.neg(m)
  return _ew.sub(r, m)

ad.primitive_jvps[linear_solve_p] = _linear_solve_jvp


def _linear_solve_transpose(cts, *primals, const_lengths, jaxprs):
  if jaxprs.transpose_solve is None:
    raise TypeError("transpose_solve required for backwards mode automatic differentiation "
                    "of custom_linear_solve (pass transpose_solve=, or symmetric=True when "
                    "matvec is symmetric)")
  params, b = _split_args(primals, const_lengths)
  if any(ad.is_undefined_primal(x) for x in _flatten(params)):
    raise NotImplementedError("custom_linear_solve: the transpose is linear in b only; the "
                              "matvec and solve closures must not be linear inputs")
  nb = len(b)
  b_avals = [x.aval for x in b]
  cts = [ad.zeros_like_aval(a) if type(ct) is ad.Zero else ct
         for ct, a in zip(cts[:nb], b_avals)]
  swapped = params.transpose()
  cts_b = linear_solve_p.bind(*_flatten(swapped), *cts,
                              const_lengths=const_lengths.transpose(),
                              jaxprs=jaxprs.transpose())
  return [None] * len(_flatten(params)) + list(cts_b[:nb])

ad.primitive_transposes[linear_solve_p] = _linear_solve_transpose


def _linear_solve_batch(axis_data, vals, dims, *, const_lengths, jaxprs):
  # Every component of b and x is batched (simpler than JAX's fixed point, and exact).
  params, b = _split_args(vals, const_lengths)
  params_dims, b_dims = _split_args(dims, const_lengths)
  size = axis_data.size
  b = [batching.matchaxis(v, d, 0, size) for v, d in zip(b, b_dims)]
  nb = len(b)
  new = []
  for closed, cdims in zip(jaxprs, params_dims):
    if closed is None:
      new.append(None)
      continue
    in_dims = tuple(cdims) + (0,) * nb
    new.append(_memo(_batch_jaxpr, closed, size, axis_data.name, in_dims, True)[0])
  outs = linear_solve_p.bind(*_flatten(params), *b, const_lengths=const_lengths,
                             jaxprs=_LinearSolveTuple(*new))
  return outs, [0] * len(outs)

batching.fancy_primitive_batchers[linear_solve_p] = _linear_solve_batch


# --- custom_linear_solve -----------------------------------------------------------------

def _bound_solve(matvec):
  return lambda solve: (lambda x: solve(matvec, x))


def _transposed(fun, avals):
  """The linear transpose of the flat linear function ``fun`` (a VJP at zero)."""
  def vecmat(*cts):
    zeros = [ad.zeros_like_aval(a) for a in avals]
    _, pullback = ad.vjp(lambda *xs: fun(*xs), zeros)
    return [ad.instantiate_zeros(c) for c in pullback(list(cts))]
  return vecmat


def _dce_closed(closed):
  return ClosedJaxpr(dce_jaxpr(closed.jaxpr)[0], closed.consts)


@api_boundary
def custom_linear_solve(matvec: Callable, b, solve: Callable,
                        transpose_solve: Callable | None = None, symmetric: bool = False,
                        has_aux: bool = False):
  """Solves a linear system with ``solve``, differentiating implicitly.

  The result is ``solve(matvec, b)``, and derivatives treat it as the solution ``x`` of
  ``matvec(x) == b`` rather than differentiating through ``solve``'s steps. ``matvec`` must be
  linear. Forward mode needs nothing more; reverse mode also needs ``transpose_solve(vecmat,
  b)``, which solves the transposed system, or ``symmetric=True`` (then ``solve`` serves for
  both). The functions are traced once per argument signature; ``b`` may be a pytree.

  Args:
    matvec: linear function computing the matrix-vector product.
    b: right-hand side (array or pytree of arrays).
    solve: function ``solve(matvec, b)`` returning ``x`` (and auxiliary data with ``has_aux``).
    transpose_solve: optional ``transpose_solve(vecmat, b)`` for reverse mode.
    symmetric: if True, the system is symmetric and ``solve`` is used for the transpose.
    has_aux: if True, ``solve`` returns ``(x, aux)``; ``aux`` is not differentiated.

  Returns:
    The solution ``x`` (with ``aux`` when ``has_aux``).

  Examples:
    >>> solve = lambda matvec, b: b / 2.
    >>> lax.custom_linear_solve(lambda x: 2. * x, jnp.array([4., 6.]), solve, symmetric=True)
    Array([2., 3.], dtype=float32)
    >>> f = lambda b: lax.custom_linear_solve(lambda x: 2. * x, b, solve, symmetric=True).sum()
    >>> hlox.grad(f)(jnp.array([4., 6.]))
    Array([0.5, 0.5], dtype=float32)
  """
  leaves, tree = tree_util.tree_flatten(b)
  args_tree = tree_util.tree_structure((b,))  # the traced functions take b positionally
  avals = [get_aval(x) for x in leaves]
  api = "custom_linear_solve"
  mv, mv_consts, mv_tree = _trace_fun(matvec, args_tree, avals, api)
  _check_tree("matvec", "b", mv_tree, mv.out_avals, tree, avals)

  solve_fn = _cached_wrapper(("solve", matvec), solve, _bound_solve(matvec))
  sv, sv_consts, sv_tree = _trace_fun(solve_fn, args_tree, avals, api)
  if has_aux:
    x_tree, aux_tree = _split_aux_tree("solve", sv_tree)
  else:
    x_tree, aux_tree = sv_tree, None
  _check_tree("solve", "b", x_tree, sv.out_avals[:len(leaves)], tree, avals)

  vm = tsv = None
  vm_consts, tsv_consts = [], []
  if symmetric:
    vm, vm_consts, tsv, tsv_consts = mv, mv_consts, sv, sv_consts
  elif transpose_solve is not None:
    vecmat_flat = _transposed(partial(_run, mv, mv_consts), avals)
    vecmat = _unflat_fn(vecmat_flat, tree)
    vm_fn = _cached_wrapper(("vecmat", mv), matvec, lambda _: vecmat)
    vm, vm_consts, _ = _trace_fun(vm_fn, args_tree, avals, api)
    vm = _memo(_dce_closed, vm)  # the VJP's forward pass at zero is dead code
    tsv_fn = _cached_wrapper(("transpose_solve", vm), transpose_solve,
                             _bound_solve(vecmat))
    tsv, tsv_consts, tsv_tree = _trace_fun(tsv_fn, args_tree, avals, api)
    if has_aux:
      tsv_tree, _ = _split_aux_tree("transpose_solve", tsv_tree)
    _check_tree("transpose_solve", "b", tsv_tree, tsv.out_avals[:len(leaves)], tree, avals)

  jaxprs = _LinearSolveTuple(mv, vm, sv, tsv)
  const_lengths = _LinearSolveTuple(len(mv_consts), len(vm_consts), len(sv_consts),
                                    len(tsv_consts))
  outs = linear_solve_p.bind(*mv_consts, *vm_consts, *sv_consts, *tsv_consts, *leaves,
                             const_lengths=const_lengths, jaxprs=jaxprs)
  x = tree_util.tree_unflatten(x_tree, outs[:len(leaves)])
  if has_aux:
    return x, tree_util.tree_unflatten(aux_tree, outs[len(leaves):])
  return x


def _split_aux_tree(what, out_tree):
  children = tree_util.treedef_children(out_tree) if out_tree.num_nodes > 1 else []
  if len(children) != 2:
    raise ValueError(f"{what}() produced a pytree with structure {out_tree}, but a pair "
                     "(solution, auxiliary output) was expected because has_aux was set to "
                     "True.")
  return children[0], children[1]


def _unflat_fn(flat_fn, tree):
  def fn(x):
    leaves, t = tree_util.tree_flatten(x)
    return tree_util.tree_unflatten(tree, flat_fn(*leaves))
  return fn


# --- custom_root -------------------------------------------------------------------------

class _RootPrimitive(Primitive):
  multiple_results = True


custom_root_p = _RootPrimitive("custom_root")


class _RootTuple(NamedTuple):
  f: object
  solve: object
  l_and_s: object


def _split_root_args(args, const_lengths):
  out, i = [], 0
  for n in const_lengths:
    out.append(list(args[i:i + n]))
    i += n
  return _RootTuple(*out), list(args[i:])


def _root_abstract_eval(*avals, const_lengths, jaxprs, num_x):
  return list(jaxprs.solve.out_avals)

custom_root_p.def_abstract_eval(_root_abstract_eval)
custom_root_p.def_impl(partial(xla.apply_primitive, custom_root_p))


def _root_lowering(ctx, *args, const_lengths, jaxprs, num_x):
  params, guess = _split_root_args(args, const_lengths)
  return xla.lower_call(ctx, jaxprs.solve, [*params.solve, *guess], name="custom_root",
                        scope=ctx.module_context.scope)

xla.register_lowering(custom_root_p, _root_lowering)


def _root_jvp(primals, tangents, *, const_lengths, jaxprs, num_x):
  # f(params, x*) = 0  =>  x*_dot = -(d_x f)^-1 (d_params f) params_dot; the guess does not
  # move the root, so its tangent is ignored.
  outs = custom_root_p.bind(*primals, const_lengths=const_lengths, jaxprs=jaxprs,
                            num_x=num_x)
  params, _ = _split_root_args(primals, const_lengths)
  params_dot, _ = _split_root_args(tangents, const_lengths)
  x = outs[:num_x]
  aux_zeros = [ad.Zero.from_primal_value(v) for v in outs[num_x:]]
  zeros = [ad.Zero.from_primal_value(v) for v in x]
  if all(type(t) is ad.Zero for t in params_dot.f):
    return outs, zeros + aux_zeros
  _, rhs = ad.jvp(partial(_run, jaxprs.f, []), params.f + x, params_dot.f + zeros)
  if all(type(r) is ad.Zero for r in rhs):
    return outs, zeros + aux_zeros
  rhs = [ad.instantiate_zeros(r) for r in rhs]
  x_dot = _run(jaxprs.l_and_s, params.l_and_s, *x, *rhs)
  return outs, [_ew.neg(t) for t in x_dot] + aux_zeros

ad.primitive_jvps[custom_root_p] = _root_jvp


def _root_batch(axis_data, vals, dims, *, const_lengths, jaxprs, num_x):
  params, guess = _split_root_args(vals, const_lengths)
  params_dims, guess_dims = _split_root_args(dims, const_lengths)
  size = axis_data.size
  guess = [batching.matchaxis(v, d, 0, size) for v, d in zip(guess, guess_dims)]
  n_in = {"f": num_x, "solve": num_x, "l_and_s": 2 * num_x}
  new = [_memo(_batch_jaxpr, closed, size, axis_data.name,
               tuple(cdims) + (0,) * n_in[name], True)[0]
         for name, closed, cdims in zip(_RootTuple._fields, jaxprs, params_dims)]
  outs = custom_root_p.bind(*_flatten(params), *guess, const_lengths=const_lengths,
                            jaxprs=_RootTuple(*new), num_x=num_x)
  return outs, [0] * len(outs)

batching.fancy_primitive_batchers[custom_root_p] = _root_batch


def _bound_root_solve(f):
  return lambda solve: (lambda x: solve(f, x))


def _linearize_and_solve(f, tangent_solve, tree):
  """``(x, b) -> tangent_solve(df(x), b)``: the linear solve of the implicit derivative."""
  def l_and_s(x, b):
    x_leaves, _ = tree_util.tree_flatten(x)
    flat_f = lambda *xs: tree_util.tree_flatten(f(tree_util.tree_unflatten(tree, xs)))[0]  # noqa: E731
    _, lin = ad.linearize(flat_f, x_leaves)

    def jac(t):
      t_leaves, _ = tree_util.tree_flatten(t)
      outs = lin(*t_leaves)
      avals = lin.out_avals
      return tree_util.tree_unflatten(tree, [ad.zeros_like_aval(a) if type(o) is ad.Zero
                                             else o for o, a in zip(outs, avals)])
    return tangent_solve(jac, b)
  return l_and_s


@api_boundary
def custom_root(f: Callable, initial_guess, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False):
  """Finds a root of ``f`` with ``solve``, differentiating implicitly at the root.

  The result is ``solve(f, initial_guess)``; derivatives come from the implicit function
  theorem at the root, never through ``solve``'s iterations. ``tangent_solve(g, y)`` solves
  the linear system ``g(x) == y`` for ``x``, where ``g`` is the derivative of ``f`` at the
  root (for scalars ``lambda g, y: y / g(1.0)``).

  Args:
    f: function whose root is wanted (same structure in and out).
    initial_guess: starting point (array or pytree of arrays).
    solve: function ``solve(f, initial_guess)`` returning the root.
    tangent_solve: function ``tangent_solve(g, y)`` solving the linearized system.
    has_aux: if True, ``solve`` returns ``(root, aux)``; ``aux`` is not differentiated.

  Returns:
    The root (with ``aux`` when ``has_aux``).

  Examples:
    >>> def newton_sqrt(a):  # the root of x**2 - a, by a few Newton steps
    ...   f = lambda x: x ** 2 - a
    ...   def solve(f, x):
    ...     for _ in range(20):
    ...       x = x - f(x) / (2 * x)
    ...     return x
    ...   return lax.custom_root(f, 1., solve, lambda g, y: y / g(1.0))
    >>> newton_sqrt(4.)
    Array(2., dtype=float32, weak_type=True)
    >>> hlox.grad(newton_sqrt)(4.)  # 1 / (2 sqrt(a))
    Array(0.25, dtype=float32, weak_type=True)
  """
  leaves, tree = tree_util.tree_flatten(initial_guess)
  args_tree = tree_util.tree_structure((initial_guess,))
  avals = [get_aval(x) for x in leaves]
  api = "custom_root"
  fj, f_consts, f_tree = _trace_fun(f, args_tree, avals, api)
  _check_tree("f", "initial_guess", f_tree, fj.out_avals, tree, avals)
  solve_fn = _cached_wrapper(("root_solve", f), solve, _bound_root_solve(f))
  sv, sv_consts, sv_tree = _trace_fun(solve_fn, args_tree, avals, api)
  if has_aux:
    x_tree, aux_tree = _split_aux_tree("solve", sv_tree)
  else:
    x_tree, aux_tree = sv_tree, None
  _check_tree("solve", "initial_guess", x_tree, sv.out_avals[:len(leaves)], tree, avals)
  pair = tree_util.tree_structure((initial_guess, initial_guess))
  ls_fn = _cached_wrapper(("root_l_and_s", f, tree), tangent_solve,
                          lambda ts: _linearize_and_solve(f, ts, tree))
  ls, ls_consts, ls_tree = _trace_fun(ls_fn, pair, avals + avals, api)
  _check_tree("tangent_solve", "initial_guess", ls_tree, ls.out_avals, tree, avals)
  outs = custom_root_p.bind(*f_consts, *sv_consts, *ls_consts, *leaves,
                            const_lengths=_RootTuple(len(f_consts), len(sv_consts),
                                                     len(ls_consts)),
                            jaxprs=_RootTuple(fj, sv, ls), num_x=len(leaves))
  x = tree_util.tree_unflatten(x_tree, outs[:len(leaves)])
  if has_aux:
    return x, tree_util.tree_unflatten(aux_tree, outs[len(leaves):])
  return x
