"""Code written for trax.fastmath runs unchanged on hlox.fastmath, and gives the same numbers
on the hlox and the NumPy backend. The small layer library below uses only ``fastmath`` and
``fastmath.numpy``, in Trax's idioms (module-level wrapping, nested weights, scan-based
recurrence, index updates, signatures)."""
import functools

import numpy as onp
import pytest

import hlox.fastmath as fastmath
from hlox.fastmath import numpy as jnp  # Trax: `from trax.fastmath import numpy as jnp`


# --- a Trax-style library, written once -------------------------------------------------------

def glorot_uniform(rng, shape):
  fan_in, fan_out = shape[-2], shape[-1]
  limit = (6.0 / (fan_in + fan_out)) ** 0.5
  return fastmath.random.uniform(rng, shape, jnp.float32, -limit, limit)


def init_model(rng):
  rngs = fastmath.random.split(rng, 4)
  return {
      "conv": (glorot_uniform(rngs[0], (3, 3, 1, 4)), jnp.zeros((4,), jnp.float32)),
      "rnn": glorot_uniform(rngs[1], (4, 4)),
      "dense": (glorot_uniform(rngs[2], (16, 3)),
                fastmath.random.uniform(rngs[3], (3,), jnp.float32, -0.1, 0.1)),
  }


def relu(x):
  return jnp.maximum(x, 0.)


def log_softmax(x, axis=-1):
  return x - fastmath.logsumexp(x, axis=axis, keepdims=True)


def forward(weights, x):
  w, b = weights["conv"]
  h = fastmath.conv(x, w, (1, 1), "SAME", ("NHWC", "HWIO", "NHWC")) + b
  h = relu(h)
  h = fastmath.avg_pool(h, (2, 2), (2, 2), "SAME")  # (N, 2, 2, 4)
  seq = jnp.reshape(h, (h.shape[0], 4, 4)).transpose(1, 0, 2)  # (T=4, N, 4)

  def step(carry, x_t):
    new = jnp.tanh(x_t + carry @ weights["rnn"])
    return new, new
  _, hs = fastmath.scan(step, jnp.zeros_like(seq[0]), seq)
  flat = jnp.reshape(hs.transpose(1, 0, 2), (hs.shape[1], 16))
  w, b = weights["dense"]
  return log_softmax(flat @ w + b)


def loss_fn(weights, x, labels):
  logp = forward(weights, x)
  picked = jnp.take_along_axis(logp, labels[:, None], axis=1)
  return -jnp.mean(picked)


def count_positives(x):
  # index_* and fori_loop in the style of Trax's metrics.
  counts = jnp.zeros((3,), jnp.int32)
  counts = fastmath.index_add(counts, jnp.argmax(x, axis=1), 1)
  return fastmath.fori_loop(0, 3, lambda i, acc: acc + counts[i] * (i + 1), 0)


# Wrapped at import time, as Trax's layers/base.py does. As in Trax, a transformation belongs
# to the backend active when it is made (here the default, hlox).
grad_loss = fastmath.jit(fastmath.grad(loss_fn))


def data(seed):
  rng = onp.random.default_rng(seed)
  return (rng.standard_normal((5, 4, 4, 1)).astype(onp.float32),
          rng.integers(0, 3, (5,)).astype(onp.int32))


def run(backend, seed=0):
  with fastmath.use_backend(backend):
    jit_forward, jit_loss = fastmath.jit(forward), fastmath.jit(loss_fn)
    weights = init_model(fastmath.random.get_prng(seed))
    x, labels = data(seed)
    out = {
        "weights": weights,
        "logits": jit_forward(weights, jnp.asarray(x)),
        "loss": jit_loss(weights, jnp.asarray(x), jnp.asarray(labels)),
        "count": fastmath.jit(count_positives)(jit_forward(weights, jnp.asarray(x))),
        "sig": fastmath.abstract_eval(forward)(
            fastmath.nested_map(fastmath.signature, weights), fastmath.ShapeDtype((5, 4, 4, 1))),
        "flat": fastmath.tree_flatten(weights),
    }
    kind = type(out["logits"])
  assert (kind is onp.ndarray) == (backend == "numpy"), kind  # really ran on that backend
  return fastmath.nested_map(lambda v: v if isinstance(v, fastmath.ShapeDtype) else
                             onp.asarray(v), out)


@pytest.mark.parametrize("seed", [0, 1])
def test_same_code_same_numbers_on_both_backends(seed):
  h, n = run("hlox", seed), run("numpy", seed)
  for a, b in zip(fastmath.tree_leaves(h["weights"]), fastmath.tree_leaves(n["weights"])):
    assert a.dtype == b.dtype == onp.float32
    onp.testing.assert_array_equal(a.view(onp.uint32), b.view(onp.uint32))  # identical init
  onp.testing.assert_allclose(h["logits"], n["logits"], rtol=1e-5, atol=1e-6)
  onp.testing.assert_allclose(h["loss"], n["loss"], rtol=1e-5)
  assert int(h["count"]) == int(n["count"])
  assert h["sig"] == n["sig"] == fastmath.ShapeDtype((5, 3), onp.float32)
  assert len(h["flat"]) == len(n["flat"]) == 5
  # log_softmax rows sum to one in probability space.
  onp.testing.assert_allclose(onp.exp(n["logits"]).sum(1), onp.ones(5), rtol=1e-5)


def test_training_step_on_hlox_and_the_clear_error_on_numpy():
  x, labels = data(3)
  with fastmath.use_backend("hlox"):
    jit_loss = fastmath.jit(loss_fn)
    weights = init_model(fastmath.random.get_prng(3))
    before = jit_loss(weights, x, labels)
    grads = grad_loss(weights, x, labels)
    new = fastmath.nested_map_multiarg(lambda w, g: w - 0.5 * g, weights, grads)
    after = jit_loss(new, x, labels)
  assert float(after) < float(before)
  with fastmath.use_backend("numpy"):
    weights = init_model(fastmath.random.get_prng(3))
    numpy_grad = fastmath.grad(loss_fn)  # made while the NumPy backend is active
    with pytest.raises(NotImplementedError, match=r"fastmath.grad .*use_backend\('hlox'\)"):
      numpy_grad(weights, x, labels)


def test_trax_style_module_level_pmap_under_numpy():
  # layers/base.py defines `_axis_index` with a pmap decorator at import time.
  with fastmath.use_backend("numpy"):
    @functools.partial(fastmath.pmap, axis_name="batch")
    def _axis_index(unused_x):
      return unused_x
    with pytest.raises(NotImplementedError, match="fastmath.pmap"):
      _axis_index(onp.zeros(1))
