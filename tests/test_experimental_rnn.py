"""hlox.experimental.rnn: cuDNN's packed LSTM weights (sizes, unpacking, gate swap) and the
reference LSTM against a NumPy LSTM written from PyTorch's equations, under grad and jit, and
against JAX's jax.experimental.rnn."""
import importlib.util

import numpy as np
import pytest

import hlox
import hlox.numpy as jnp
from hlox.experimental import rnn
from tests.util import check_against_jax_modules


def _sigmoid(x):
  return 1 / (1 + np.exp(-x))


def _numpy_lstm(x, h0, c0, W_ih, W_hh, b_ih, b_hh, lengths, num_layers, bidirectional):
  """Batch-first LSTM, one sequence at a time, each run over its own length only."""
  dirs = 2 if bidirectional else 1
  batch, _, _ = x.shape
  hidden = h0.shape[-1]
  y = np.zeros((batch, x.shape[1], dirs * hidden))
  h_n, c_n = np.zeros_like(h0, np.float64), np.zeros_like(c0, np.float64)
  for b in range(batch):
    n = lengths[b]
    seq = x[b, :n].astype(np.float64)
    for layer in range(num_layers):
      outs = []
      for d in range(dirs):
        l = layer * dirs + d
        h, c = h0[l, b].astype(np.float64), c0[l, b].astype(np.float64)
        hs = []
        for t in (range(n - 1, -1, -1) if d else range(n)):
          pre = W_ih[l] @ seq[t] + b_ih[l] + W_hh[l] @ h + b_hh[l]
          i, f, g, o = np.split(pre, 4)
          c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
          h = _sigmoid(o) * np.tanh(c)
          hs.append(h)
        outs.append(np.array(hs[::-1] if d else hs).reshape(n, hidden))
        h_n[l, b], c_n[l, b] = h, c
      seq = np.concatenate(outs, axis=-1)
    y[b, :n] = seq
  return y, h_n, c_n


@pytest.mark.parametrize("input_size, hidden, layers, bidirectional",
                         [(2, 3, 1, False), (1, 4, 2, False), (2, 3, 2, True), (3, 1, 1, True)])
def test_lstm_ref_matches_numpy(input_size, hidden, layers, bidirectional):
  dirs = 2 if bidirectional else 1
  rng = np.random.default_rng(layers * 10 + hidden)
  batch, steps = 3, 5
  x = rng.standard_normal((batch, steps, input_size)).astype(np.float32)
  h0 = rng.standard_normal((dirs * layers, batch, hidden)).astype(np.float32)
  c0 = rng.standard_normal((dirs * layers, batch, hidden)).astype(np.float32)
  lengths = np.array([5, 2, 1], np.int32)
  weights = rnn.init_lstm_weight(hlox.random.PRNGKey(0), input_size, hidden, layers,
                                 bidirectional)
  assert weights.shape == (rnn.get_num_params_in_lstm(input_size, hidden, layers,
                                                      bidirectional),)
  assert weights.dtype == np.float32
  assert float(jnp.max(jnp.abs(weights))) <= np.sqrt(1 / hidden)
  unpacked = rnn.unpack_lstm_weights(weights, input_size, hidden, layers, bidirectional)
  y, h_n, c_n = rnn.lstm_ref(x, h0, c0, *unpacked, lengths, input_size, hidden, layers, 0.0,
                             bidirectional)
  want = _numpy_lstm(x, h0, c0, *[{k: np.asarray(v, np.float64) for k, v in d.items()}
                                  for d in unpacked], lengths, layers, bidirectional)
  for got, expected in zip((y, h_n, c_n), want):
    np.testing.assert_allclose(np.asarray(got), expected, rtol=2e-5, atol=2e-6)


def test_packed_layout_and_gate_swap():
  # 2-layer bidirectional: 4 pseudo-layers; matrices first, then biases.
  n = rnn.get_num_params_in_lstm(2, 3, 2, True)
  assert n == 2 * (12 * 2 + 12 * 3) + 2 * (12 * 6 + 12 * 3) + 8 * 12
  w = jnp.arange(n, dtype=jnp.float32)
  W_ih, W_hh, b_ih, b_hh = rnn.unpack_lstm_weights(w, 2, 3, 2, True)
  assert [W_ih[l].shape for l in range(4)] == [(12, 2), (12, 2), (12, 6), (12, 6)]
  assert W_hh[0].shape == (12, 3) and b_ih[3].shape == (12,)
  assert float(W_hh[0][0, 0]) == 24 and float(b_ih[0][0]) == n - 96
  swapped = np.asarray(rnn.swap_lstm_gates(w, 2, 3, 2, True)[:24]).reshape(12, 2)
  gates = np.split(np.arange(24.0).reshape(12, 2), 4)
  np.testing.assert_array_equal(swapped, np.concatenate([gates[0], gates[1], gates[3],
                                                         gates[2]]))


def test_gradients_are_finite_and_padding_is_zero():
  w = rnn.init_lstm_weight(hlox.random.PRNGKey(1), 2, 3, 2, True)
  x = np.random.default_rng(0).standard_normal((2, 4, 2)).astype(np.float32)
  h0 = c0 = np.zeros((4, 2, 3), np.float32)
  lengths = np.array([4, 2], np.int32)

  def loss(w):
    y, h, c = rnn.lstm_ref(x, h0, c0, *rnn.unpack_lstm_weights(w, 2, 3, 2, True), lengths,
                           2, 3, 2, 0.0, True)
    return jnp.sum(y) + jnp.sum(h * c), y

  (_, y), g = hlox.value_and_grad(loss, has_aux=True)(w)
  assert np.isfinite(np.asarray(g)).all() and np.abs(np.asarray(g)).sum() > 0
  np.testing.assert_array_equal(np.asarray(y[1, 2:]), 0)


def test_lstm_kernel_and_bad_arguments_raise():
  w = rnn.init_lstm_weight(hlox.random.PRNGKey(0), 1, 1, 1, False)
  x, h = jnp.ones((1, 2, 1)), jnp.ones((1, 1, 1))
  with pytest.raises(NotImplementedError, match="lstm_ref"):
    rnn.lstm(x, h, h, w, jnp.array([2], jnp.int32), 1, 1, 1, 0.0, False)
  unpacked = rnn.unpack_lstm_weights(w, 1, 1, 1, False)
  with pytest.raises(NotImplementedError, match="int32"):
    rnn.lstm_ref(x, h, h, *unpacked, jnp.array([2], jnp.uint8), 1, 1, 1, 0.0, False)
  with pytest.raises(NotImplementedError, match="Dropout"):
    rnn.lstm_ref(x, h, h, *unpacked, jnp.array([2], jnp.int32), 1, 1, 1, 0.5, False)


_ORACLE_PRELUDE = (
    "rng = np.random.default_rng(3); B, T, I, H, L, bi = {}; D = 2 if bi else 1; "
    "x = rng.standard_normal((B, T, I)).astype(np.float32); "
    "h0 = rng.standard_normal((D * L, B, H)).astype(np.float32); "
    "c0 = rng.standard_normal((D * L, B, H)).astype(np.float32); "
    "w = rng.uniform(-.5, .5, m.get_num_params_in_lstm(I, H, L, bi)).astype(np.float32); "
    "sl = rng.integers(0, T, B).astype(np.int32); ")


@pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                    reason="jax (the test oracle) is not installed")
@pytest.mark.jax_oracle
def test_matches_jax():
  # Lengths may be 0 (JAX's test draws them from [0, T)): the final carry is then the last
  # step's, as in JAX's reference.
  programs = {}
  for name, dims in {"bi": (4, 4, 2, 6, 3, True), "uni": (3, 5, 2, 3, 2, False)}.items():
    programs[name] = ("experimental.rnn", _ORACLE_PRELUDE.format(dims) + (
        "y, hn, cn = m.lstm_ref(x, h0, c0, *m.unpack_lstm_weights(w, I, H, L, bi), sl, I, H, "
        "L, 0.0, bi); return y, hn, cn, m.swap_lstm_gates(w, I, H, L, bi)"))
  check_against_jax_modules(programs, rtol=1e-5, atol=1e-6)
