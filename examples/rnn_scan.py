"""A recurrent network built on ``lax.scan``, trained to continue sine waves.

Each training sequence is a sine wave with its own frequency and phase; the network reads it one
step at a time and predicts the next value. Since the frequency differs from sequence to
sequence, the network has to infer it from what it has seen so far and carry it in its hidden
state, which is what a recurrent network is for.

The recurrence is an Elman cell, ``h_t = tanh(x_t W_x + h_{t-1} W_h + b)``, run over time with
``lax.scan``: the traced program holds the cell once, however long the sequence, and ``grad``
of the scan is a scan backwards in time. Parameters are updated with Adam, written out with
``tree_map``.

    python examples/rnn_scan.py
    python examples/rnn_scan.py --steps 300 --hidden 64
"""
from __future__ import annotations

import argparse

import numpy as np

import hlox
import hlox.numpy as jnp
from hlox import lax, random
from hlox.tree_util import tree_map


def make_batch(rng: np.random.Generator, batch: int, length: int):
  """Inputs and next-step targets, time-major: two float32 arrays of shape ``(T, B, 1)``."""
  freq = rng.uniform(0.1, 0.4, size=(1, batch))
  phase = rng.uniform(0, 2 * np.pi, size=(1, batch))
  t = np.arange(length + 1)[:, None]
  wave = np.sin(freq * t + phase).astype(np.float32)[..., None]
  return wave[:-1], wave[1:]


def init_params(key, hidden: int) -> dict:
  kx, kh = random.split(key)
  return {
      "w_x": random.normal(kx, (1, hidden)),
      # Scaled so that the recurrence neither explodes nor dies out at the start: a Gaussian
      # matrix with entries of variance 1/hidden has spectral radius close to 1.
      "w_h": 0.9 * random.normal(kh, (hidden, hidden)) / np.sqrt(hidden),
      "b": jnp.zeros(hidden),
      # A zero readout starts every prediction at 0, so the first loss is the targets' variance.
      "w_y": jnp.zeros((hidden, 1)),
      "b_y": jnp.zeros(1),
  }


def rnn(params, xs):
  """Predictions for every step of ``xs`` (``(T, B, 1)``), scanning the cell over time."""

  def cell(h, x_t):
    h = jnp.tanh(x_t @ params["w_x"] + h @ params["w_h"] + params["b"])
    return h, h @ params["w_y"] + params["b_y"]

  h0 = jnp.zeros((xs.shape[1], params["w_h"].shape[0]))
  _, ys = lax.scan(cell, h0, xs)
  return ys


def loss_fn(params, xs, targets, warmup: int):
  # The first few steps are too short to tell the frequency from, so they are not scored.
  return jnp.mean((rnn(params, xs)[warmup:] - targets[warmup:]) ** 2)


def make_update(lr: float, warmup: int, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
  """The compiled Adam step (Kingma & Ba, 2015) with gradient-norm clipping at 1."""

  @hlox.jit
  def update(params, state, xs, targets):
    m, v, step = state
    loss, grads = hlox.value_and_grad(loss_fn)(params, xs, targets, warmup)
    norm = jnp.sqrt(sum(jnp.sum(g * g) for g in hlox.tree_util.tree_leaves(grads)))
    grads = tree_map(lambda g: g * jnp.minimum(1.0, 1.0 / (norm + 1e-12)), grads)
    step = step + 1
    m = tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
    v = tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
    m_hat_scale, v_hat_scale = 1 / (1 - b1 ** step), 1 / (1 - b2 ** step)
    params = tree_map(lambda p, m, v: p - lr * m * m_hat_scale
                      / (jnp.sqrt(v * v_hat_scale) + eps), params, m, v)
    return params, (m, v, step), loss

  return update


def parse_args(argv):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--steps", type=int, default=500)
  p.add_argument("--hidden", type=int, default=32)
  p.add_argument("--seq-len", type=int, default=40)
  p.add_argument("--batch", type=int, default=32)
  p.add_argument("--lr", type=float, default=1e-2)
  p.add_argument("--warmup", type=int, default=5, help="leading steps left out of the loss")
  p.add_argument("--seed", type=int, default=0)
  p.add_argument("--print-every", type=int, default=50)
  return p.parse_args(argv)


def main(argv=None) -> list[float]:
  """Train and return the loss of every step (on that step's fresh batch)."""
  args = parse_args(argv)
  rng = np.random.default_rng(args.seed)
  params = init_params(random.key(args.seed), args.hidden)
  zeros = tree_map(jnp.zeros_like, params)
  state = (zeros, zeros, jnp.zeros((), jnp.float32))
  update = make_update(args.lr, args.warmup)
  losses = []
  for step in range(args.steps):
    xs, targets = make_batch(rng, args.batch, args.seq_len)
    params, state, loss = update(params, state, xs, targets)
    losses.append(float(loss))
    if step % args.print_every == 0 or step == args.steps - 1:
      print(f"step {step:4d}: loss {losses[-1]:.5f}")
  return losses


if __name__ == "__main__":
  main()
