"""hlox.example_libraries (stax layers, optimizers) against NumPy references, and against
JAX's own ``jax.example_libraries`` as an oracle (same keys give the same parameters; the
same updates give the same numbers), including a small MNIST-style training loop."""
import importlib.util

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox import random
from hlox.example_libraries import optimizers, stax

from tests.example_libraries_oracle import check_against_jax

KEY = random.PRNGKey(0)


def _np(x):
  return np.asarray(x, dtype=np.float64)


# --- stax: shapes and values against NumPy ------------------------------------------------

def test_mlp_init_shapes_and_apply_values():
  init, apply = stax.serial(stax.Dense(8), stax.Relu, stax.Dense(3), stax.LogSoftmax)
  out_shape, params = init(KEY, (-1, 5))
  assert out_shape == (-1, 3)
  assert [tuple(p.shape) for layer in params for p in layer] == [(5, 8), (8,), (8, 3), (3,)]
  assert params[1] == () and params[3] == ()
  x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
  (W1, b1), _, (W2, b2), _ = params
  h = np.maximum(_np(x) @ _np(W1) + _np(b1), 0) @ _np(W2) + _np(b2)
  want = h - np.log(np.exp(h).sum(-1, keepdims=True))
  np.testing.assert_allclose(_np(apply(params, x)), want, rtol=1e-5, atol=1e-5)
  # jit and the eager apply agree; the whole pipeline is traceable.
  np.testing.assert_allclose(_np(hlox.jit(apply)(params, x)), _np(apply(params, x)),
                             rtol=1e-6, atol=1e-6)


def test_dense_draws_from_split_keys():
  init, _ = stax.Dense(4)
  _, (W, b) = init(KEY, (3, 2))
  k1, k2 = random.split(KEY)
  np.testing.assert_array_equal(_np(W), _np(stax.glorot_normal()(k1, (2, 4))))
  np.testing.assert_array_equal(_np(b), _np(stax.normal()(k2, (4,))))


def test_conv_layers_shapes_and_values():
  x = np.random.default_rng(1).standard_normal((2, 7, 6, 3)).astype(np.float32)
  init, apply = stax.Conv(4, (3, 2), strides=(2, 1), padding="SAME")
  shape, (W, b) = init(KEY, x.shape)
  assert shape == (2, 4, 6, 4) and W.shape == (3, 2, 3, 4) and b.shape == (1, 1, 1, 4)
  out = apply((W, b), x)
  assert out.shape == shape
  # One output pixel by hand: SAME padding of a 3x2 window at stride (2, 1).
  xp = np.pad(_np(x), ((0, 0), (1, 1), (0, 1), (0, 0)))
  pixel = np.einsum("hwi,hwio->o", xp[1, 2:5, 3:5], _np(W)) + _np(b)[0, 0, 0]
  np.testing.assert_allclose(_np(out)[1, 1, 3], pixel, rtol=1e-5, atol=1e-5)
  for layer, in_shape, want in [(stax.ConvTranspose(2, (3, 3), strides=(2, 2)),
                                 (1, 4, 5, 3), (1, 9, 11, 2)),
                                (stax.Conv1DTranspose(5, (2,), padding="SAME"),
                                 (2, 6, 1), (2, 6, 5))]:
    shape, params = layer[0](KEY, in_shape)
    assert shape == want
    assert layer[1](params, jnp.ones(in_shape)).shape == want


def test_batchnorm_against_numpy():
  x = np.random.default_rng(2).standard_normal((4, 3, 2, 5)).astype(np.float32)
  init, apply = stax.BatchNorm(axis=(0, 1, 2))
  shape, (beta, gamma) = init(KEY, x.shape)
  assert shape == x.shape and beta.shape == gamma.shape == (5,)
  beta, gamma = beta + 0.5, gamma * 2.0
  mean, var = x.mean((0, 1, 2)), x.var((0, 1, 2))
  want = 2.0 * (x - mean) / np.sqrt(var + 1e-5) + 0.5
  np.testing.assert_allclose(_np(apply((beta, gamma), x)), want, rtol=1e-4, atol=1e-4)
  init, apply = stax.BatchNorm(axis=0, center=False, scale=False)
  _, params = init(KEY, (4, 3))
  assert params == ((), ())
  y = x[:, :, 0, 0]
  np.testing.assert_allclose(_np(apply(params, y)),
                             (y - y.mean(0)) / np.sqrt(y.var(0) + 1e-5), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("spec", [None, "NCHW", "WHNC"])
def test_pooling_against_numpy(spec):
  # The window and strides apply to the spatial axes in the order the spec lists them.
  layout = spec or "NHWC"
  x = np.random.default_rng(3).standard_normal((2, 4, 6, 3)).astype(np.float32)
  spatial = tuple(i for i, c in enumerate(layout) if c in "HW")
  windows = np.lib.stride_tricks.sliding_window_view(x, (2, 3), axis=spatial)
  windows = windows[tuple(slice(None, None, 2) if i == spatial[0] else slice(None)
                          for i in range(4))]
  for layer, reduce in [(stax.MaxPool, np.max), (stax.SumPool, np.sum),
                        (stax.AvgPool, np.mean)]:
    init, apply = layer((2, 3), strides=(2, 1), spec=spec)
    shape, params = init(KEY, x.shape)
    want = reduce(windows, axis=(-2, -1))
    assert shape == want.shape and params == ()
    np.testing.assert_allclose(_np(apply(params, x)), want, rtol=1e-5, atol=1e-5)


def test_avgpool_same_padding_counts_real_elements():
  x = np.arange(1., 7.).reshape(1, 2, 3, 1).astype(np.float32)
  _, apply = stax.AvgPool((2, 2), padding="SAME")
  out = _np(apply((), x))[0, :, :, 0]
  # SAME pads one row below and one column right; edge windows average what they cover.
  np.testing.assert_allclose(out, [[3.0, 4.0, 4.5], [4.5, 5.5, 6.0]], rtol=1e-6)


def test_combinators_and_fans():
  x = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
  block = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(5), stax.Identity),
                      stax.FanInConcat())
  shape, params = block[0](KEY, x.shape)
  assert shape == (3, 9)
  (W, b), ident = params[1]
  assert ident == ()
  np.testing.assert_allclose(_np(block[1](params, x)),
                             np.concatenate([_np(x) @ _np(W) + _np(b), _np(x)], -1),
                             rtol=1e-5, atol=1e-5)
  shape, _ = stax.FanInSum[0](KEY, [(3, 4), (3, 4)])
  assert shape == (3, 4)
  np.testing.assert_allclose(_np(stax.FanInSum[1]((), [x, 2 * x])), 3 * _np(x), rtol=1e-6)
  shape, _ = stax.FanInConcat(1)[0](KEY, [(1, 2, 4), (1, 1, 4)])
  assert shape == (1, 3, 4)
  shape, _ = stax.Flatten[0](KEY, (2, 3, 4))
  assert shape == (2, 12)
  assert stax.Flatten[1]((), np.ones((2, 3, 4))).shape == (2, 12)
  # shape_dependent builds its layer from the input shape.
  layer = stax.shape_dependent(lambda shape: stax.Dense(shape[-1] * 2))
  shape, params = layer[0](KEY, (3, 4))
  assert shape == (3, 8) and layer[1](params, x).shape == (3, 8)


def test_elementwise_layers():
  x = np.linspace(-2, 2, 9).astype(np.float32)
  cases = {"Relu": np.maximum(x, 0), "Tanh": np.tanh(x), "Exp": np.exp(x),
           "Sigmoid": 1 / (1 + np.exp(-x)), "Softplus": np.log1p(np.exp(x)),
           "Elu": np.where(x > 0, x, np.expm1(x)), "LeakyRelu": np.where(x > 0, x, 0.01 * x),
           "Softmax": np.exp(x) / np.exp(x).sum(),
           "LogSoftmax": x - np.log(np.exp(x).sum()), "Identity": x}
  for name, want in cases.items():
    init, apply = getattr(stax, name)
    assert init(KEY, x.shape) == (x.shape, ())
    np.testing.assert_allclose(_np(apply((), x)), want, rtol=1e-5, atol=1e-6, err_msg=name)
  assert stax.glorot is stax.glorot_normal and stax.randn is stax.normal
  assert stax.logsoftmax is stax.log_softmax


def test_dropout_keeps_with_probability_rate():
  x = np.ones((1000,), np.float32)
  init, apply = stax.Dropout(0.8)
  out = _np(apply((), x, rng=KEY))
  kept = out != 0
  np.testing.assert_allclose(out[kept], 1 / 0.8, rtol=1e-6)
  assert 0.75 < kept.mean() < 0.85
  np.testing.assert_array_equal(_np(stax.Dropout(0.5, mode="test")[1]((), x, rng=KEY)), x)
  with pytest.raises(ValueError, match="Dropout layer requires apply_fun to be called with "
                                       "a PRNG key"):
    apply((), x)


# --- optimizers: update arithmetic against NumPy --------------------------------------------

def _run_numpy(update, state, grads):
  for i, g in enumerate(grads):
    state = update(i, g, state)
  return state


def _grads(n=3, shape=(2, 3), seed=5):
  rng = np.random.default_rng(seed)
  return [rng.standard_normal(shape) for _ in range(n)]


NUMPY_OPTIMIZERS = {
    "sgd": ((0.1,), lambda x: x, lambda i, g, x: x - 0.1 * g, lambda s: s),
    "momentum": ((0.1, 0.9), lambda x: (x, 0 * x),
                 lambda i, g, s: (s[0] - 0.1 * (0.9 * s[1] + g), 0.9 * s[1] + g),
                 lambda s: s[0]),
    "nesterov": ((0.1, 0.9), lambda x: (x, 0 * x),
                 lambda i, g, s: (s[0] - 0.1 * (0.9 * (0.9 * s[1] + g) + g),
                                  0.9 * s[1] + g), lambda s: s[0]),
    "rmsprop": ((0.1,), lambda x: (x, 0 * x),
                lambda i, g, s: (s[0] - 0.1 * g / np.sqrt(0.9 * s[1] + 0.1 * g * g + 1e-8),
                                 0.9 * s[1] + 0.1 * g * g), lambda s: s[0]),
}


def _adagrad_np(i, g, s):
  x, g_sq, m = s
  g_sq = g_sq + g * g
  m = 0.1 * g / np.sqrt(g_sq) + 0.9 * m
  return x - 0.1 * m, g_sq, m


def _rmsprop_momentum_np(i, g, s):
  x, avg, mom = s
  avg = 0.9 * avg + 0.1 * g * g
  mom = 0.9 * mom + 0.1 * g / np.sqrt(avg + 1e-8)
  return x - mom, avg, mom


def _adam_np(i, g, s):
  x, m, v = s
  m = 0.1 * g + 0.9 * m
  v = 0.001 * g * g + 0.999 * v
  m_hat, v_hat = m / (1 - 0.9 ** (i + 1)), v / (1 - 0.999 ** (i + 1))
  return x - 0.1 * m_hat / (np.sqrt(v_hat) + 1e-8), m, v


def _adamax_np(i, g, s):
  x, m, u = s
  m = 0.1 * g + 0.9 * m
  u = np.maximum(0.999 * u, np.abs(g))
  return x - 0.1 / (1 - 0.9 ** (i + 1)) * m / (u + 1e-8), m, u


def _sm3_np(i, g, s):
  x, m, v0, v1 = s
  accum = np.minimum(v0[:, None], v1[None, :]) + g * g
  m = 0.1 * g / np.sqrt(accum) + 0.9 * m
  return x - 0.1 * m, m, accum.max(1), accum.max(0)


ZEROS3 = lambda x: (x, 0 * x, 0 * x)
NUMPY_OPTIMIZERS.update({
    "adagrad": ((0.1,), ZEROS3, _adagrad_np, lambda s: s[0]),
    "rmsprop_momentum": ((0.1,), ZEROS3, _rmsprop_momentum_np, lambda s: s[0]),
    "adam": ((0.1,), ZEROS3, _adam_np, lambda s: s[0]),
    "adamax": ((0.1,), ZEROS3, _adamax_np, lambda s: s[0]),
    "sm3": ((0.1,), lambda x: (x, 0 * x, np.zeros(2), np.zeros(3)), _sm3_np, lambda s: s[0]),
})


@pytest.mark.parametrize("name", sorted(NUMPY_OPTIMIZERS))
def test_optimizer_updates_match_numpy(name):
  args, np_init, np_update, np_params = NUMPY_OPTIMIZERS[name]
  x0 = np.random.default_rng(6).standard_normal((2, 3))
  grads = _grads()
  with hlox.enable_x64(True):
    init, update, get_params = getattr(optimizers, name)(*args)
    params = {"w": jnp.asarray(x0), "b": [jnp.asarray(x0[0])]}
    state = init(params)
    step = hlox.jit(update)
    for i, g in enumerate(grads):
      state = step(i, {"w": jnp.asarray(g), "b": [jnp.asarray(g[0])]}, state)
    got = get_params(state)
  np.testing.assert_allclose(_np(got["w"]), np_params(_run_numpy(np_update, np_init(x0),
                                                                  grads)), rtol=1e-10)
  if name != "sm3":  # SM3's covers are per axis: a 1-d leaf is plain Adagrad-like
    want_b = np_params(_run_numpy(np_update, np_init(x0[0]), [g[0] for g in grads]))
    np.testing.assert_allclose(_np(got["b"][0]), want_b, rtol=1e-10)


def test_optimizer_state_is_a_pytree_and_round_trips():
  init, update, get_params = optimizers.momentum(0.1, 0.9)
  params = {"a": jnp.ones(2), "b": (jnp.zeros(3), jnp.full((), 2.0))}
  state = init(params)
  assert isinstance(state, optimizers.OptimizerState)
  leaves = hlox.tree.leaves(state)
  assert len(leaves) == 6  # (x, velocity) per parameter
  marked = optimizers.unpack_optimizer_state(state)
  assert isinstance(marked["a"], optimizers.JoinPoint)
  again = optimizers.pack_optimizer_state(marked)
  assert again.tree_def == state.tree_def and again.subtree_defs == state.subtree_defs
  hlox.tree.map(np.testing.assert_array_equal, get_params(again), params)
  with pytest.raises(TypeError, match="did not match the parameter tree structure"):
    update(0, {"a": jnp.ones(2)}, state)
  with pytest.raises(AssertionError, match="JoinPoint"):
    optimizers.pack_optimizer_state({"a": jnp.ones(2)})


def test_schedules_and_utilities():
  steps = np.arange(0, 12)
  check = lambda sched, want: np.testing.assert_allclose(
      [float(sched(i)) for i in steps], want, rtol=1e-6)
  check(optimizers.constant(0.3), 0.3 * np.ones(12))
  check(optimizers.exponential_decay(1.0, 4, 0.5), 0.5 ** (steps / 4))
  check(optimizers.inverse_time_decay(1.0, 4, 0.5), 1 / (1 + 0.5 * steps / 4))
  check(optimizers.inverse_time_decay(1.0, 4, 0.5, staircase=True),
        1 / (1 + 0.5 * np.floor(steps / 4)))
  check(optimizers.polynomial_decay(1.0, 8, 0.1, power=2.0),
        (1 - np.minimum(steps, 8) / 8) ** 2 * 0.9 + 0.1)
  check(optimizers.piecewise_constant([3, 7], [1.0, 0.5, 0.1]),
        np.where(steps > 7, 0.1, np.where(steps > 3, 0.5, 1.0)))
  with pytest.raises(ValueError, match="one shorter"):
    optimizers.piecewise_constant([3, 7], [1.0, 0.5])
  with pytest.raises(ValueError, match="must be sequences"):
    optimizers.piecewise_constant(3, [1.0, 0.5])
  with pytest.raises(TypeError):
    optimizers.make_schedule(np.ones(2))
  sched = optimizers.make_schedule(0.2)
  assert sched(5) == 0.2
  tree = {"a": jnp.array([3.0, 0.0]), "b": jnp.array([[4.0]])}
  np.testing.assert_allclose(float(optimizers.l2_norm(tree)), 5.0, rtol=1e-6)
  clipped = optimizers.clip_grads(tree, 1.0)
  np.testing.assert_allclose(_np(clipped["a"]), [0.6, 0.0], rtol=1e-6)
  np.testing.assert_allclose(_np(optimizers.clip_grads(tree, 10.0)["b"]), [[4.0]])


# --- against JAX ----------------------------------------------------------------------------

# Bodies of prog(jax, jnp, stax, optimizers, odeint, np), run in JAX and in hlox.
PROGRAMS = {
    "mlp_init_apply": """
  init, apply = stax.serial(stax.Dense(16), stax.Relu, stax.Dense(10), stax.LogSoftmax)
  shape, params = init(jax.random.PRNGKey(1), (-1, 8))
  x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
  return params, apply(params, x), jnp.array(shape)
""",
    "convnet_init_apply": """
  init, apply = stax.serial(
      stax.Conv(4, (3, 3), padding="SAME"), stax.BatchNorm(), stax.Relu,
      stax.MaxPool((2, 2), strides=(2, 2)), stax.Conv(6, (2, 2), strides=(1, 2)), stax.Gelu,
      stax.AvgPool((2, 1), padding="SAME"), stax.Flatten, stax.Dense(5), stax.Softmax)
  shape, params = init(jax.random.PRNGKey(2), (2, 8, 8, 3))
  x = np.random.default_rng(1).standard_normal((2, 8, 8, 3)).astype(np.float32)
  return params, apply(params, x), jnp.array(shape)
""",
    "transpose_convs": """
  i1, a1 = stax.ConvTranspose(3, (3, 2), strides=(2, 1), padding="SAME")
  i2, a2 = stax.Conv1DTranspose(2, (3,), strides=(2,))
  i3, a3 = stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 2, (2, 2))
  s1, p1 = i1(jax.random.PRNGKey(3), (1, 4, 3, 2))
  s2, p2 = i2(jax.random.PRNGKey(4), (2, 5, 1))
  s3, p3 = i3(jax.random.PRNGKey(5), (1, 3, 4, 4))
  r = np.random.default_rng(2)
  return (p1, p2, p3, a1(p1, r.standard_normal((1, 4, 3, 2)).astype(np.float32)),
          a2(p2, r.standard_normal((2, 5, 1)).astype(np.float32)),
          a3(p3, r.standard_normal((1, 3, 4, 4)).astype(np.float32)),
          jnp.array(s1 + s2 + s3))
""",
    "dropout_parallel_fans": """
  init, apply = stax.serial(
      stax.Dense(6), stax.FanOut(3),
      stax.parallel(stax.Dropout(0.7), stax.serial(stax.Dense(6), stax.Selu), stax.Tanh),
      stax.FanInSum, stax.Dense(4, W_init=jax.nn.initializers.he_uniform()),
      stax.FanOut(2), stax.parallel(stax.Elu, stax.Softplus), stax.FanInConcat(-1))
  shape, params = init(jax.random.PRNGKey(6), (5, 3))
  x = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)
  return params, apply(params, x, rng=jax.random.PRNGKey(7)), jnp.array(shape)
""",
    "optimizers_all": """
  params = {"w": jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3) / 7,
            "b": (jnp.float32(0.5) * jnp.ones(3, jnp.float32), jnp.float32(-1.0))}
  loss = lambda p: jnp.sum(jnp.sin(p["w"]) ** 2) + jnp.sum(p["b"][0] ** 3) + p["b"][1] ** 2
  sched = optimizers.piecewise_constant([1, 3], [0.1, 0.05, 0.01])
  makers = [optimizers.sgd(sched), optimizers.momentum(0.1, 0.8),
            optimizers.nesterov(optimizers.exponential_decay(0.1, 2, 0.5), 0.9),
            optimizers.adagrad(0.2), optimizers.rmsprop(0.05),
            optimizers.rmsprop_momentum(optimizers.inverse_time_decay(0.05, 2, 0.3, True)),
            optimizers.adam(optimizers.polynomial_decay(0.1, 3, 0.01)),
            optimizers.adamax(0.1), optimizers.sm3(0.1)]
  out = []
  for opt_init, opt_update, get_params in makers:
    state = opt_init(params)
    step = jax.jit(opt_update)  # (SM3's state holds the shape: get_params stays outside)
    for i in range(5):
      state = step(i, jax.grad(loss)(get_params(state)), state)
    out.append(get_params(state))
  g = jax.grad(loss)(params)
  out.append(optimizers.clip_grads(g, 0.5))
  out.append(optimizers.l2_norm(g))
  return out
""",
    "mnist_style_training": """
  init_random_params, predict = stax.serial(
      stax.Dense(32), stax.Relu, stax.Dense(32), stax.Relu, stax.Dense(10), stax.LogSoftmax)
  rng = jax.random.PRNGKey(0)
  r = np.random.default_rng(4)
  images = r.standard_normal((64, 20)).astype(np.float32)
  labels = np.eye(10, dtype=np.float32)[r.integers(0, 10, 64)]
  def loss(params, batch):
    inputs, targets = batch
    return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))
  def accuracy(params, batch):
    inputs, targets = batch
    return jnp.mean(jnp.argmax(predict(params, inputs), 1) == jnp.argmax(targets, 1))
  opt_init, opt_update, get_params = optimizers.adam(1e-2)
  @jax.jit
  def update(i, opt_state, batch):
    params = get_params(opt_state)
    return opt_update(i, jax.grad(loss)(params, batch), opt_state)
  _, init_params = init_random_params(rng, (-1, 20))
  opt_state = opt_init(init_params)
  losses = []
  for i in range(8):
    batch = (images[8 * i:8 * i + 8], labels[8 * i:8 * i + 8])
    opt_state = update(i, opt_state, batch)
    losses.append(loss(get_params(opt_state), (images, labels)))
  params = get_params(opt_state)
  return jnp.stack(losses), accuracy(params, (images, labels)), params
""",
}


# The convolution programs compile many eager primitives on both sides: run with -m slow.
SLOW_PROGRAMS = ("convnet_init_apply", "transpose_convs")

needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                               reason="jax (the test oracle) is not installed")


@needs_jax
@pytest.mark.jax_oracle
def test_matches_jax_example_libraries():
  check_against_jax({k: v for k, v in PROGRAMS.items() if k not in SLOW_PROGRAMS},
                    rtol=2e-6, atol=2e-6)


@needs_jax
@pytest.mark.jax_oracle
@pytest.mark.slow
def test_matches_jax_conv_layers():
  check_against_jax({k: PROGRAMS[k] for k in SLOW_PROGRAMS}, rtol=2e-6, atol=2e-6)
