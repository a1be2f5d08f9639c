"""An MNIST-style digit classifier written from scratch with hlox, on synthetic data.

There is no download: each of the ten classes is a fixed random 28x28 "stroke" pattern, and an
example is its class's pattern, shifted by a pixel or two, dimmed or brightened, with noise on
top. A two-hidden-layer perceptron learns to tell them apart with SGD and momentum.

Everything a training loop needs is spelled out: parameters initialised with ``hlox.random``,
a cross-entropy loss, one ``jit``-compiled update step, shuffling, mini-batches, and the
accuracy on held-out data after each epoch.

    python examples/mnist_classifier.py                      # the default sizes
    python examples/mnist_classifier.py --epochs 2 --train-size 512
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import hlox
import hlox.numpy as jnp
from hlox import random

SIDE, NUM_CLASSES = 28, 10


# --- data ------------------------------------------------------------------------------------

def make_prototypes(rng: np.random.Generator) -> np.ndarray:
  """Ten smooth random patterns in [0, 1], one per class, shape ``(10, 28, 28)``."""
  yy, xx = np.mgrid[0:SIDE, 0:SIDE].astype(np.float32)
  protos = np.zeros((NUM_CLASSES, SIDE, SIDE), np.float32)
  for c in range(NUM_CLASSES):
    # A "digit" is a handful of bright blobs at class-specific places.
    for cy, cx in rng.uniform(6, SIDE - 6, size=(4, 2)):
      protos[c] += np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * 2.5 ** 2))
  return np.clip(protos, 0.0, 1.0)


def make_dataset(rng: np.random.Generator, protos: np.ndarray, n: int, noise: float):
  """``n`` flattened images (float32, ``(n, 784)``) and their labels (int32, ``(n,)``)."""
  labels = rng.integers(0, NUM_CLASSES, size=n).astype(np.int32)
  images = protos[labels]
  # Jitter each image by up to two pixels in each direction, as handwriting would.
  shifts = rng.integers(-2, 3, size=(n, 2))
  images = np.stack([np.roll(img, tuple(s), axis=(0, 1)) for img, s in zip(images, shifts)])
  images = images * rng.uniform(0.6, 1.2, size=(n, 1, 1))
  images = images + noise * rng.normal(size=images.shape)
  return images.reshape(n, SIDE * SIDE).astype(np.float32), labels


# --- model -----------------------------------------------------------------------------------

def init_params(key, sizes: list[int]) -> list[dict]:
  """He-initialised weights and zero biases for a perceptron with layer widths ``sizes``."""
  params = []
  for k, (fan_in, fan_out) in zip(random.split(key, len(sizes) - 1), zip(sizes, sizes[1:])):
    w = random.normal(k, (fan_in, fan_out)) * np.sqrt(2.0 / fan_in)
    params.append({"w": w, "b": jnp.zeros(fan_out)})
  return params


def predict(params, images):
  """Logits of shape ``(batch, 10)``: ReLU hidden layers, a linear output layer."""
  h = images
  for layer in params[:-1]:
    h = hlox.nn.relu(h @ layer["w"] + layer["b"])
  return h @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, images, labels):
  logp = hlox.nn.log_softmax(predict(params, images))
  return -jnp.mean(jnp.sum(logp * hlox.nn.one_hot(labels, NUM_CLASSES), axis=-1))


def make_update(lr: float, momentum: float):
  """The compiled training step: SGD with (heavy-ball) momentum."""

  @hlox.jit
  def update(params, velocity, images, labels):
    loss, grads = hlox.value_and_grad(loss_fn)(params, images, labels)
    velocity = hlox.tree_util.tree_map(lambda v, g: momentum * v + g, velocity, grads)
    params = hlox.tree_util.tree_map(lambda p, v: p - lr * v, params, velocity)
    return params, velocity, loss

  return update


@hlox.jit
def accuracy(params, images, labels):
  return jnp.mean(jnp.argmax(predict(params, images), axis=-1) == labels)


# --- training --------------------------------------------------------------------------------

def parse_args(argv):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--train-size", type=int, default=6000)
  p.add_argument("--test-size", type=int, default=1000)
  p.add_argument("--hidden", type=int, nargs="+", default=[128, 64],
                 help="widths of the hidden layers")
  p.add_argument("--epochs", type=int, default=5)
  p.add_argument("--batch-size", type=int, default=128)
  p.add_argument("--lr", type=float, default=0.05)
  p.add_argument("--momentum", type=float, default=0.9)
  p.add_argument("--noise", type=float, default=1.0, help="pixel noise standard deviation")
  p.add_argument("--seed", type=int, default=0)
  return p.parse_args(argv)


def main(argv=None) -> float:
  """Train and return the final test accuracy (a float in [0, 1])."""
  args = parse_args(argv)
  rng = np.random.default_rng(args.seed)
  protos = make_prototypes(rng)
  train_x, train_y = make_dataset(rng, protos, args.train_size, args.noise)
  test_x, test_y = make_dataset(rng, protos, args.test_size, args.noise)
  test_x, test_y = jnp.asarray(test_x), jnp.asarray(test_y)

  params = init_params(random.key(args.seed), [SIDE * SIDE, *args.hidden, NUM_CLASSES])
  velocity = hlox.tree_util.tree_map(jnp.zeros_like, params)
  update = make_update(args.lr, args.momentum)

  batch = min(args.batch_size, args.train_size)
  # Only full batches: every call then has the same shapes and reuses one compiled program.
  steps_per_epoch = args.train_size // batch
  print(f"{args.train_size} training / {args.test_size} test images, layers "
        f"{[SIDE * SIDE, *args.hidden, NUM_CLASSES]}, {steps_per_epoch} steps per epoch")
  acc = float(accuracy(params, test_x, test_y))
  print(f"epoch 0: test accuracy {acc:.3f} (chance is {1 / NUM_CLASSES:.2f})")
  for epoch in range(1, args.epochs + 1):
    start = time.perf_counter()
    order = rng.permutation(args.train_size)
    losses = []
    for i in range(steps_per_epoch):
      idx = order[i * batch:(i + 1) * batch]
      params, velocity, loss = update(params, velocity, train_x[idx], train_y[idx])
      losses.append(loss)
    mean_loss = float(jnp.mean(jnp.stack(losses)))
    acc = float(accuracy(params, test_x, test_y))
    print(f"epoch {epoch}: train loss {mean_loss:.4f}, test accuracy {acc:.3f} "
          f"({time.perf_counter() - start:.2f} s)")
  return acc


if __name__ == "__main__":
  main()
