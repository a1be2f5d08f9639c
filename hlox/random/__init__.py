"""``hlox.random``: JAX 0.10.2's PRNGs and distributions, bit-identical to JAX.

Belongs here: keys, ``split``/``fold_in``, random bits and every sampler, written on
``hlox.lax`` and ``hlox.numpy`` (the ``threefry2x32`` primitive, with its rules, and the
rbg implementations live in ``prng.py``; ``philox.py`` and ``threefry4x32.py`` hold the
other hashes and the implementations on them). May import ``lax``, ``numpy``, the
transformations and the interpreters' rule tables; never jaxlib, nor the runtime beyond the
``Array`` type.
"""
from hlox.random.prng import (  # noqa: F401
    PRNGKey, bits, clone, fold_in, key, key_data, split, threefry2x32_p,
    wrap_key_data)
from hlox.random.prng import key_dtype, key_impl  # noqa: F401
from hlox.random import philox, threefry4x32  # noqa: F401  (register their PRNGs)
from hlox.random import key_functions  # noqa: F401  (jnp/lax structural functions on keys)
from hlox.random.distributions import *  # noqa: F401,F403


def _with_out_sharding(sampler):
  """``sampler`` taking JAX's ``out_sharding=``: its result laid out so (a sharding
  constraint inside ``jit``, a transfer outside)."""
  import functools
  import inspect

  @functools.wraps(sampler)
  def sample(*args, out_sharding=None, **kwargs):
    from hlox.lax.sharding_constraint import canonical_out_sharding, constrain
    out = sampler(*args, **kwargs)
    out_sharding = canonical_out_sharding(out_sharding)
    if out_sharding is None:
      return out
    return constrain(out, out_sharding)
  try:
    signature = inspect.signature(sampler)
    params = list(signature.parameters.values())
    params.append(inspect.Parameter("out_sharding", inspect.Parameter.KEYWORD_ONLY,
                                    default=None))
    sample.__signature__ = signature.replace(parameters=params)
  except (TypeError, ValueError):
    pass
  return sample


for _name in ("bits", "uniform", "randint", "permutation", "normal", "multivariate_normal",
              "truncated_normal", "bernoulli", "beta", "cauchy", "dirichlet", "exponential",
              "gamma", "loggamma", "poisson", "gumbel", "categorical", "laplace", "logistic",
              "pareto", "t", "chisquare", "f", "rademacher", "maxwell", "orthogonal",
              "generalized_normal", "ball", "rayleigh", "wald", "geometric", "triangular",
              "lognormal"):
  if _name in globals() and "out_sharding" not in getattr(
      globals()[_name], "__code__", _with_out_sharding).co_varnames:
    globals()[_name] = _with_out_sharding(globals()[_name])
# The namespace holds JAX's names only (``dir(jax.random)`` lists no helpers, nor the key
# array class: that is ``hlox.random.prng.PRNGKeyArray``).
del _name, _with_out_sharding
