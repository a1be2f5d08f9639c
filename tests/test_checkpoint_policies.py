"""checkpoint's policies (JAX's ``checkpoint_policies`` names), ``checkpoint_name`` and the
inspection of what a linearized checkpoint recomputes."""
import functools

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.ad_checkpoint import checkpoint_name

P = hlox.checkpoint_policies


def _lin_text(f, *args):
  _, f_lin = hlox.linearize(f, *args)
  return str(f_lin.func.args[0]), f_lin


def test_linearize_exposes_linear_jaxpr_and_evaluates():
  f = hlox.checkpoint(lambda x: jnp.sin(jnp.sin(x)))
  text, f_lin = _lin_text(f, 1.)
  # Nothing is saved: the backward pass recomputes the inner sin and both cosines.
  assert " sin " in text and " cos " in text
  np.testing.assert_allclose(f_lin(2.), 2 * np.cos(np.sin(1.)) * np.cos(1.), rtol=1e-6)
  assert f_lin.out_nzs == (True,)


@pytest.mark.parametrize("policy,n_dots", [(P.checkpoint_dots, 6), (P.dots_saveable, 6),
                                           (P.nothing_saveable, 9)])
def test_dots_policy_counts(policy, n_dots):
  @functools.partial(hlox.checkpoint, policy=policy)
  def f(x):
    for _ in range(3):
      x = jnp.sin(jnp.dot(x, x, precision=lax.Precision.HIGHEST))
    return x
  text, _ = _lin_text(f, jnp.ones((2, 2)))
  # Two tangent dots per dot; the forward dots are recomputed unless saved. The last sin's
  # output is never needed (only the cosines and the sins feeding the next dots).
  assert text.count(" dot_general") == n_dots
  assert text.count(" sin ") == 2


def test_no_batch_dims_policy():
  def f(x, b):
    x = jnp.sin(jnp.einsum("ij,jk->ik", x, x))
    b = jnp.sin(jnp.einsum("bij,bjk->bik", b, b))
    return jnp.sum(x) + jnp.sum(b)
  g = hlox.checkpoint(f, policy=P.dots_with_no_batch_dims_saveable)
  text, _ = _lin_text(g, jnp.ones((2, 2)), jnp.ones((3, 2, 2)))
  # The batched dot is recomputed (one forward dot), the other is saved.
  assert text.count(" dot_general") == 2 + 1 + 2
  x, b = jnp.ones((2, 2)) * 0.3, jnp.ones((3, 2, 2)) * 0.2
  for a, e in zip(hlox.grad(g, (0, 1))(x, b), hlox.grad(f, (0, 1))(x, b)):
    np.testing.assert_allclose(a, e, rtol=1e-5)


def _named(x):
  y = checkpoint_name(jnp.sin(x), "y")
  z = checkpoint_name(jnp.sin(y), "z")
  return jnp.sin(z)


@pytest.mark.parametrize("policy,saved", [
    (P.save_only_these_names("y", "z"), {"y", "z"}),
    (P.save_only_these_names("z"), {"z"}),
    (P.save_only_these_names(), set()),
    (P.save_any_names_but_these("y"), {"z"}),
    (P.save_from_both_policies(P.save_only_these_names("y"), P.save_only_these_names("z")),
     {"y", "z"}),
    (P.save_and_offload_only_these_names(names_which_can_be_saved=["y"],
                                         names_which_can_be_offloaded=["z"],
                                         offload_src="device", offload_dst="pinned_host"),
     {"y", "z"}),
])
def test_name_policies(policy, saved):
  g = hlox.checkpoint(_named, policy=policy)
  text, f_lin = _lin_text(g, 0.5)
  # cos(y) and cos(z) need y and z: each one not saved is recomputed by its sin.
  n_recomputed_sin = ("y" not in saved) + ("z" not in saved)
  assert text.count(" sin ") == n_recomputed_sin
  np.testing.assert_allclose(f_lin(1.), hlox.jvp(_named, (0.5,), (1.,))[1], rtol=1e-6)
  np.testing.assert_allclose(hlox.grad(g)(0.5), hlox.grad(_named)(0.5), rtol=1e-6)


def test_offload_names_must_be_disjoint():
  with pytest.raises(ValueError, match="should not intersect"):
    P.save_and_offload_only_these_names(names_which_can_be_saved=["y"],
                                        names_which_can_be_offloaded=["y"],
                                        offload_src="device", offload_dst="pinned_host")


def test_save_from_both_policies_needs_bools():
  both = P.save_from_both_policies(P.save_only_these_names("y"),
                                   P.offload_dot_with_no_batch_dims("device", "pinned_host"))
  with pytest.raises(ValueError, match="boolean"):
    hlox.grad(hlox.checkpoint(lambda x: jnp.sin(jnp.dot(x, x)).sum(), policy=both))(
        jnp.ones((2, 2)))


def test_policy_sees_avals_and_params():
  seen = []

  def policy(prim, *avals, **params):
    seen.append((str(prim), tuple(a.shape for a in avals), sorted(params)))
    return False
  g = hlox.grad(hlox.checkpoint(lambda x: jnp.sum(jnp.sin(x) * 2.), policy=policy))
  np.testing.assert_allclose(g(jnp.ones(3)), 2 * np.cos(np.ones(3)), rtol=1e-6)
  # The only known value the backward pass needs is cos(x), asked about with its input aval.
  assert seen == [("cos", ((3,),), sorted(seen[0][2]))]


def test_checkpoint_name_vmap_and_pytree():
  f = lambda x: checkpoint_name({"a": x * 2., "b": x}, "y")["a"] + 1.
  g = hlox.vmap(hlox.checkpoint(f, policy=P.save_only_these_names("y")))
  x = jnp.arange(6.).reshape(2, 3)
  np.testing.assert_allclose(g(x), x * 2. + 1.)
  np.testing.assert_allclose(hlox.grad(lambda a: jnp.sum(g(a)))(x), np.full((2, 3), 2.))
  assert "name[name=y]" in str(hlox.make_jaxpr(f)(1.))
  h = hlox.jit(lambda x: jnp.tanh(checkpoint_name(x @ x, "m")))
  np.testing.assert_allclose(h(jnp.ones((2, 2))), np.tanh(np.full((2, 2), 2.)), rtol=1e-6)


def test_checkpoint_traces_once_per_signature():
  count, box = [0], [2.]

  @hlox.checkpoint
  def g(x):
    count[0] += 1
    return jnp.sin(x) * box[0]
  for _ in range(5):
    g(2.)
  assert count[0] == 1
  g(jnp.ones(3))
  assert count[0] == 2
  # A trace closing over an enclosing transformation's tracer is not reused.
  @hlox.checkpoint
  def h(x):
    return jnp.sin(x) * box[0]

  def outer(a):
    box[0] = a
    return h(1.)
  np.testing.assert_allclose(hlox.grad(outer)(3.), np.sin(1.), rtol=1e-6)
  np.testing.assert_allclose(hlox.jit(outer)(4.), 4 * np.sin(1.), rtol=1e-6)
  np.testing.assert_allclose(hlox.jit(outer)(5.), 5 * np.sin(1.), rtol=1e-6)


def test_backward_pass_is_a_named_checkpoint():
  f = hlox.checkpoint(lambda x: jnp.sum(jnp.tanh(x @ x)))
  x = jnp.ones((3, 3)) * 0.2
  y, f_vjp = hlox.vjp(f, x)
  closed = hlox.make_jaxpr(f_vjp)(y)
  # As JAX's: the recomputed equations (dot_general, tanh, sub) carry the name, the
  # linear ones do not.
  body = closed.jaxpr.eqns[0].params["jaxpr"].jaxpr
  assert [str(e.source_info.name_stack) for e in body.eqns][:4] == [
      "rematted_computation"] * 3 + [""]
  np.testing.assert_allclose(f_vjp(1.)[0], hlox.grad(lambda x: jnp.sum(jnp.tanh(x @ x)))(x),
                             rtol=1e-6)
