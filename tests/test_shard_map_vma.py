"""Varying manual axes (vma) in traced shard_map bodies, as JAX 0.10.2 has them: body
values' types say along which manual axes they may differ between devices, ``pvary`` is
inserted where operands disagree, collectives change the axes, out_specs are checked
against the types, and printed jaxprs read as JAX's. Compared with JAX where installed."""
import importlib.util

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import lax
from hlox.sharding import PartitionSpec as P

from util import printed_here, printed_in_jax


def _mesh(shape=(4, 2), names=("i", "j")):
  return hlox.make_mesh(shape, names, axis_types=(hlox.sharding.AxisType.Auto,) * len(names))


X = np.arange(16.0, dtype=np.float32).reshape(8, 2)
W = np.array([1.0, 2.0], np.float32)


def _seen(f, *args, **kw):
  """The types ``f``'s body saw for its values (traced under jit)."""
  seen = []
  mesh = _mesh()

  def body(*xs):
    return f(seen, *xs)
  hlox.jit(hlox.shard_map(body, mesh=mesh, **kw))(*args)
  return seen


def test_inputs_and_results_carry_vma():
  def f(seen, x, w):
    y = x * w
    seen += [x.aval, w.aval, y.aval, lax.psum(y, "i").aval]
    return y
  x_t, w_t, y_t, s_t = _seen(f, X, W, in_specs=(P("i"), P()), out_specs=P("i"))
  assert x_t.vma == frozenset({"i"}) and w_t.vma == frozenset()
  assert y_t.vma == frozenset({"i"}) and s_t.vma == frozenset()
  assert y_t.mat.varying == frozenset({"i"}) and str(y_t) == "float32[2,2]{V:i}"
  assert str(x_t.update(vma=("i", "j"))) == "float32[2,2]{V:(i,j)}"


def test_collectives_rules():
  def f(seen, x):
    seen += [lax.axis_index("j") + 0 * x[0, 0],
             lax.all_gather(x, "j"), lax.ppermute(x, "j", [(0, 1), (1, 0)]),
             lax.pmax(x, "i"), lax.psum(lax.pcast(x, "j", to="varying"), ("i", "j"))]
    seen[:] = [v.aval.vma for v in seen]
    return x
  vmas = _seen(f, X, in_specs=P("i"), out_specs=P("i"))
  assert vmas == [{"i", "j"}, {"i", "j"}, {"i", "j"}, set(), set()]


def test_check_vma_false_has_no_vma():
  def f(seen, x):
    seen.append(hlox.typeof(x * 2))
    return x
  t, = _seen(f, X, in_specs=P("i"), out_specs=P("i"), check_vma=False)
  assert t.vma == frozenset() and str(t) == "float32[2,2]"


def test_out_specs_checked_by_types():
  mesh = _mesh()
  f = hlox.shard_map(lambda x: lax.all_gather(x, "i", tiled=True), mesh=mesh,
                     in_specs=P("i"), out_specs=P())
  with pytest.raises(ValueError, match=r"(?s)only varying across mesh axes \{\} and not "
                     r"\{i\}, but it was inferred to be possibly varying over \{i\}"):
    hlox.jit(f)(X)
  ok = hlox.shard_map(lambda x: lax.psum(x, "i"), mesh=mesh, in_specs=P("i"), out_specs=P())
  np.testing.assert_allclose(np.asarray(hlox.jit(ok)(X)), X.reshape(4, 2, 2).sum(0))


def test_pcast_errors():
  mesh = _mesh()
  run = lambda body: hlox.jit(hlox.shard_map(body, mesh=mesh, in_specs=P("i"),  # noqa: E731
                                             out_specs=P("i", "j")))(X)
  with pytest.raises(ValueError, match="Unsupported pcast from=varying, to='varying'"):
    run(lambda x: lax.pcast(x, "i", to="varying"))
  with pytest.raises(ValueError, match=r"input state: \{'varying', 'invarying'\}"):
    run(lambda x: lax.pcast(x, ("i", "j"), to="varying"))
  with pytest.raises(AssertionError, match="not a manual axis"):
    run(lambda x: lax.pcast(x, "k", to="varying"))
  with pytest.raises(ValueError, match=r"jax.lax.psum can only accept axis_name"):
    run(lambda x: lax.psum(x, ("i", "j")))  # varying along 'i' only
  y = run(lambda x: lax.pcast(x, "j", to="varying"))
  np.testing.assert_allclose(np.asarray(y), np.tile(X, (1, 2)))


def test_values_and_gradients_with_control_flow():
  mesh = _mesh()

  def body(a, b):
    c, _ = lax.scan(lambda c, _: (c + a * b, None), jnp.zeros_like(a), None, length=3)
    c = lax.cond(True, lambda: c, lambda: jnp.zeros_like(c))
    return lax.psum((c * c).sum(), "i"), c
  for check in (True, False):
    f = hlox.shard_map(body, mesh=mesh, in_specs=(P("i"), P()), out_specs=(P(), P("i")),
                       check_vma=check)
    total, c = hlox.jit(f)(X, W)
    np.testing.assert_allclose(np.asarray(c), 3 * X * W)
    np.testing.assert_allclose(float(total), ((3 * X * W) ** 2).sum(), rtol=1e-6)
    ga, gb = hlox.grad(lambda a, b: f(a, b)[0], argnums=(0, 1))(X, W)
    np.testing.assert_allclose(np.asarray(ga), 2 * 9 * X * W * W, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(gb), (2 * 9 * X * X * W).sum(0), rtol=1e-5)
    gb2 = hlox.grad(lambda b: f(X, b)[1].sum())(W)
    np.testing.assert_allclose(np.asarray(gb2), 3 * X.sum(0), rtol=1e-6)


def test_vmap_and_jit_inside_body():
  mesh = _mesh()

  def body(x):
    y = hlox.vmap(lambda r: r * lax.axis_index("i"))(x)
    return hlox.jit(lambda v: lax.psum(v, "i"))(y)
  f = hlox.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=P())
  want = (X.reshape(4, 2, 2) * np.arange(4)[:, None, None]).sum(0)
  np.testing.assert_allclose(np.asarray(hlox.jit(f)(X)), want)


# --- printed jaxprs against JAX's -------------------------------------------------------

PROGRAMS = {
    "mul": "f = lambda x: x * 2\nspecs = dict(in_specs=P('i'), out_specs=P('i'))",
    "add_invariant": "f = lambda x, y: x + y\nspecs = dict(in_specs=(P('i'), P()), "
                     "out_specs=P('i'))\nargs = (x, x[:2])",
    "psum_invariant": "f = lambda x: m.lax.psum(x, 'i')\nspecs = dict(in_specs=P(), "
                      "out_specs=P())",
    "psum_varying": "f = lambda x: m.lax.psum(x, 'i')\nspecs = dict(in_specs=P('i'), "
                    "out_specs=P('i'))",
    "pcast": "f = lambda x: m.lax.pcast(x, 'i', to='varying')\nspecs = dict(in_specs=P(), "
             "out_specs=P('i'))",
    "unchecked": "f = lambda x: x * 2\nspecs = dict(in_specs=P('i'), out_specs=P('i'), "
                 "check_vma=False)",
    "axis_names": "f = lambda x: x * 2\nspecs = dict(in_specs=P('i'), out_specs=P('i'), "
                  "axis_names={'i'})",
    "axis_index": "f = lambda x: x + m.lax.axis_index('i')\nspecs = dict(in_specs=P(), "
                  "out_specs=P('i'))",
    "pmax_pmean": "f = lambda x: m.lax.pmax(x, 'i') + m.lax.pmean(x, 'i')\n"
                  "specs = dict(in_specs=P('i'), out_specs=P())",
    "ppermute": "f = lambda x: m.lax.ppermute(x, 'i', [(0, 1), (1, 2), (2, 3), (3, 0)])\n"
                "specs = dict(in_specs=P(), out_specs=P('i'))",
    "scan": "f = lambda x: m.lax.scan(lambda c, _: (c + x, None), jnp.zeros_like(x), None, "
            "length=3)[0]\nspecs = dict(in_specs=P('i'), out_specs=P('i'))",
    "cond": "f = lambda x: m.lax.cond(True, lambda: x, lambda: jnp.zeros_like(x))\n"
            "specs = dict(in_specs=P('i'), out_specs=P('i'))",
    "replication": "f = lambda x: x\nspecs = dict(in_specs=P('i'), out_specs=P())",
}

RUN = """
mesh = m.make_mesh((4, 2), ('i', 'j'), axis_types=(m.sharding.AxisType.Auto,) * 2)
x = jnp.arange(16.).reshape(8, 2)
args = (x,)
{program}
print(m.make_jaxpr(m.shard_map(f, mesh=mesh, **specs))(*args))
"""

@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX not installed")
def test_printed_jaxprs_as_jax():
  programs = {k: RUN.format(program=v) for k, v in PROGRAMS.items()}
  want = printed_in_jax(programs)
  # (JAX ends the line of an equation without operands, ``axis_index[...]``, with a space.)
  strip = lambda text: "\n".join(line.rstrip() for line in text.splitlines())  # noqa: E731
  for name, src in programs.items():
    assert strip(printed_here(src)) == strip(want[name]), name


def test_printed_jaxpr_text():
  src = RUN.format(program=PROGRAMS["add_invariant"])
  assert printed_here(src) == """\
{ lambda ; a:f32[8,2] b:f32[2,2]. let
    c:f32[8,2] = shard_map[
      check_vma=True
      in_specs=(P('i',), P())
      jaxpr={ lambda ; d:f32[2,2]{V:i} e:f32[2,2]. let
          f:f32[2,2]{V:i} = pvary[axes=('i',)] e
          g:f32[2,2]{V:i} = add d f
        in (g,) }
      mesh=Mesh('i': 4, 'j': 2, axis_types=(Auto, Auto))
      newly_manual_axes=frozenset({'i', 'j'})
      out_specs=(P('i',),)
    ] a b
  in (c,) }
"""
