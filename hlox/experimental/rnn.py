"""``hlox.experimental.rnn``: JAX's LSTM API (``jax.experimental.rnn``) over cuDNN's packed
weight layout.

The weights of an LSTM with ``num_layers`` layers (twice as many "pseudo-layers" when
bidirectional: forward layer i, then its reverse) live in one flat float32 vector, laid out as
cuDNN packs them: first every pseudo-layer's input matrix ``W_ih`` followed by its recurrent
matrix ``W_hh``, then every pseudo-layer's biases ``b_ih`` followed by ``b_hh``. Each of
them stacks the four gates (input, forget, cell, output) along its first axis, as PyTorch's
``nn.LSTM`` does.

``lstm_ref`` is the reference LSTM written on ``lax.scan`` (it runs everywhere, under every
transformation). ``lstm`` is JAX's cuDNN kernel, which hlox cannot call: it raises
``NotImplementedError`` naming ``lstm_ref``, as JAX raises on a platform without cuDNN.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from hlox import lax
from hlox import numpy as jnp
from hlox import random
from hlox.api import jit, vmap
from hlox.nn import sigmoid, tanh

__all__ = ["get_num_params_in_lstm", "init_lstm_weight", "unpack_lstm_weights",
           "swap_lstm_gates", "lstm_ref", "lstm"]


def _param_shapes(input_size, hidden_size, num_layers, bidirectional) -> list[tuple]:
  """The shapes of the flat vector's pieces, in their order (see the module docstring)."""
  directions = 2 if bidirectional else 1
  gates = 4 * hidden_size
  matrices, biases = [], []
  for layer in range(num_layers * directions):
    # The first layer (both of its directions) reads the input; later ones read the previous
    # layer's outputs, concatenated over the directions.
    width = input_size if layer < directions else directions * hidden_size
    matrices += [(gates, width), (gates, hidden_size)]
    biases += [(gates,), (gates,)]
  return matrices + biases


def get_num_params_in_lstm(input_size: int, hidden_size: int, num_layers: int,
                           bidirectional: bool) -> int:
  """The length of the flat weight vector of such an LSTM."""
  return sum(math.prod(s) for s in _param_shapes(input_size, hidden_size, num_layers,
                                                 bidirectional))


def init_lstm_weight(rng, input_size: int, hidden_size: int, num_layers: int,
                     bidirectional: bool):
  """A flat float32 weight vector drawn from U(-k, k), ``k = sqrt(1 / hidden_size)``."""
  count = get_num_params_in_lstm(input_size, hidden_size, num_layers, bidirectional)
  bound = np.sqrt(1.0 / hidden_size)
  return random.uniform(rng, shape=(count,), dtype=jnp.float32, minval=-bound, maxval=bound)


def _pieces(weights, shapes):
  out, offset = [], 0
  for shape in shapes:
    size = math.prod(shape)
    out.append(weights[offset:offset + size].reshape(shape))
    offset += size
  return out


def unpack_lstm_weights(weights, input_size: int, hidden_size: int, num_layers: int,
                        bidirectional: bool):
  """``(W_ih, W_hh, b_ih, b_hh)``, each a dict from pseudo-layer index to that array (in a
  bidirectional LSTM, pseudo-layer ``2 l`` is layer l forwards, ``2 l + 1`` backwards)."""
  shapes = _param_shapes(input_size, hidden_size, num_layers, bidirectional)
  pieces = _pieces(weights, shapes)
  n = len(shapes) // 4  # pseudo-layers
  matrices, biases = pieces[:2 * n], pieces[2 * n:]
  W_ih = {l: matrices[2 * l] for l in range(n)}
  W_hh = {l: matrices[2 * l + 1] for l in range(n)}
  b_ih = {l: biases[2 * l] for l in range(n)}
  b_hh = {l: biases[2 * l + 1] for l in range(n)}
  return W_ih, W_hh, b_ih, b_hh


def swap_lstm_gates(weights, input_size, hidden_size, num_layers, bidirectional):
  """``weights`` with the cell and output gates of every piece swapped (the gate order that
  ROCm's MIOpen expects), as JAX's function of that name does it: the pieces are walked in
  the vector's order four at a time."""
  weights = jnp.asarray(weights)
  offset = 0
  for shape in _param_shapes(input_size, hidden_size, num_layers, bidirectional):
    size = math.prod(shape)
    i, f, g, o = jnp.split(weights[offset:offset + size].reshape(shape), 4, axis=0)
    weights = weights.at[offset:offset + size].set(jnp.concatenate([i, f, o, g]).ravel())
    offset += size
  return weights


def _cell(carry, x, W_ih, W_hh, b_ih, b_hh):
  h, c = carry
  pre = x @ W_ih.T + b_ih[None] + h @ W_hh.T + b_hh[None]
  i, f, g, o = jnp.split(pre, 4, axis=-1)
  c = sigmoid(f) * c + sigmoid(i) * tanh(g)
  h = sigmoid(o) * tanh(c)
  return (h, c), ((h, c), h)


def _run_direction(xs, h0, c0, params, seq_lengths):
  """One pseudo-layer over time-major ``xs``: the outputs (zero past each sequence's end)
  and the carry at each sequence's last step."""
  _, ((hs, cs), ys) = lax.scan(partial(_cell, **params), (h0, c0), xs)
  batch = jnp.arange(xs.shape[1])
  # A length of 0 reads step -1, the last one, as JAX's reference does.
  h_last, c_last = hs[seq_lengths - 1, batch], cs[seq_lengths - 1, batch]
  valid = jnp.arange(xs.shape[0], dtype=jnp.int32)[:, None] < seq_lengths[None]
  return jnp.where(valid[..., None], ys, 0), h_last, c_last


def _reverse_within_lengths(xs, seq_lengths):
  """Each sequence (time-major) reversed within its own length; the padding moves first."""
  steps = xs.shape[0]
  rolled = vmap(partial(jnp.roll, axis=0), in_axes=(1, 0), out_axes=1)(xs, steps - seq_lengths)
  return rolled[::-1]


@partial(jit, static_argnums=(8, 9, 10, 11, 12))
def lstm_ref(x, h_0, c_0, W_ih, W_hh, b_ih, b_hh, seq_lengths, input_size: int,
             hidden_size: int, num_layers: int, dropout: float, bidirectional: bool):
  """The reference LSTM (PyTorch's ``nn.LSTM`` equations, batch-first).

  ``x``: (batch, max_len, input_size); ``h_0``, ``c_0``: (directions * num_layers, batch,
  hidden_size); the weights as ``unpack_lstm_weights`` returns them; ``seq_lengths``: int32
  (batch,). Returns ``y`` (batch, max_len, directions * hidden_size), zero past each
  sequence's length, and the final ``h_n``, ``c_n``."""
  if jnp.dtype(seq_lengths.dtype) != jnp.dtype("int32"):
    raise NotImplementedError("`seq_lengths` can only be int32.")
  if dropout != 0.0:
    raise NotImplementedError("Dropout not supported in LSTM reference because we cannot "
                              "determine CUDNN dropout mask.")
  directions = 2 if bidirectional else 1
  xs = jnp.transpose(x, (1, 0, 2))
  h_n, c_n = [], []
  for layer in range(num_layers):
    outs = []
    for d in range(directions):
      l = layer * directions + d
      params = dict(W_ih=W_ih[l], W_hh=W_hh[l], b_ih=b_ih[l], b_hh=b_hh[l])
      inputs = _reverse_within_lengths(xs, seq_lengths) if d else xs
      ys, h, c = _run_direction(inputs, h_0[l], c_0[l], params, seq_lengths)
      outs.append(_reverse_within_lengths(ys, seq_lengths) if d else ys)
      h_n.append(h)
      c_n.append(c)
    xs = jnp.concatenate(outs, axis=-1) if directions == 2 else outs[0]
  return jnp.transpose(xs, (1, 0, 2)), jnp.stack(h_n), jnp.stack(c_n)


def lstm(x, h_0, c_0, weights, seq_lengths, input_size: int, hidden_size: int,
         num_layers: int, dropout: float, bidirectional: bool, precision=None):
  """JAX's cuDNN LSTM kernel (GPU only in JAX). hlox has no cuDNN binding: this raises
  ``NotImplementedError``; ``lstm_ref`` with ``unpack_lstm_weights`` computes the same
  function on every platform."""
  if jnp.dtype(jnp.asarray(seq_lengths).dtype) != jnp.dtype("int32"):
    raise NotImplementedError("`seq_lengths` can only be int32.")
  raise NotImplementedError(
      "rnn.lstm is the cuDNN LSTM kernel, which hlox does not provide on any platform; use "
      "rnn.lstm_ref(x, h_0, c_0, *rnn.unpack_lstm_weights(weights, input_size, hidden_size, "
      "num_layers, bidirectional), seq_lengths, input_size, hidden_size, num_layers, "
      "dropout, bidirectional)")
