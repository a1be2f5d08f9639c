"""Side-by-side benchmarks of hlox and JAX, alternating separate processes over rounds.

    python bench/run.py [--rounds 5] [--bench NAME ...]

Prints, per benchmark, the median and minimum of each library and the ratio of minimums
(hlox / JAX). The machine is noisy: compare minimums over several rounds, not single runs.
JAX (``pip install -e '.[bench]'``) is optional; without it only hlox's figures are shown.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from worker import BENCHES  # noqa: E402

TARGETS = {  # ratio hlox/JAX the Foundation issue asks for (None: no JAX comparison)
    "jit_dispatch": 1.5, "eager_sin": 1.5, "first_call_mlp": 1.2,
    "grad_mlp_step": 1.1, "grad_mlp_first_call": 1.2, "make_jaxpr_grad": 1.5,
    "per_example_grads_64_32_10": 1.1, "per_example_grads_256_128_10": 1.1,
    "rnn_scan_grad_step": 1.1, "rnn_scan_grad_first_call": 1.2,
    "random_normal_1m": 1.2, "pmap_psum_8": 1.5,
    "jit_inline_new_wrapper": 1.5, "jit_inline_partial": 1.5,
    "rss_worker": 1.0,
    "eager_mul_scalar": 1.0, "eager_add": 1.0, "eager_where": 1.0, "eager_dot": 1.0,
    "eager_reshape": 1.0, "eager_slice": 1.0, "eager_sum_axis": 1.0, "eager_at_set": 1.0,
    "eager_chain_20": 1.0, "jit_dispatch_6_in_4_out": 1.0,
    "vae_epoch_first_call": 1.0, "vae_epoch_step": 1.05,
    "vae_eval_first_call": 1.0, "vae_eval_step": 1.05, "convnet_step": 1.05,
    "sharded_dp_mlp_step_8": 1.1, "sharded_dp_mp_step_2x4": 1.1, "shard_map_psum_8": 1.1,
    "explicit_dp_mlp_step_8": 1.1,
    # On a GPU (bench/gpu.sh, --platform cuda), issue 18's targets:
    "gpu_random_normal_1e7": 1.05, "gpu_solve_2048": 1.05, "gpu_cholesky_2048": 1.05,
    "gpu_batched_matmul_64x512": 1.05,
}


# The platform the workers run on (``--platform``): JAX reads JAX_PLATFORMS, hlox too.
PLATFORM = {"name": "cpu"}


def run_worker(lib: str, bench: str) -> float:
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", JAX_PLATFORMS=PLATFORM["name"])
  out = subprocess.run([sys.executable, os.path.join(HERE, "worker.py"), "--lib", lib,
                        "--bench", bench], capture_output=True, text=True, env=env)
  if out.returncode != 0:
    raise RuntimeError(f"{lib} {bench} failed:\n{out.stderr[-3000:]}")
  return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def fmt(seconds: float, bench: str = "") -> str:
  if bench.startswith("rss_"):  # these report peak RSS in GB, not seconds
    return f"{seconds * 1e3:8.1f} MB"
  if seconds < 1e-3:
    return f"{seconds * 1e6:8.1f} us"
  return f"{seconds * 1e3:8.2f} ms"


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--bench", nargs="*", default=sorted(
      b for b in BENCHES if not b.startswith("gpu_")))
  parser.add_argument("--platform", default="cpu",
                      help="where the workers run: cpu (default) or cuda (bench/gpu.sh)")
  args = parser.parse_args()
  PLATFORM["name"] = args.platform
  have_jax = importlib.util.find_spec("jax") is not None
  libs = ["hlox", "jax"] if have_jax else ["hlox"]
  results = {b: {lib: [] for lib in libs} for b in args.bench}
  for r in range(args.rounds):
    order = libs if r % 2 == 0 else libs[::-1]
    for bench in args.bench:
      for lib in order:
        results[bench][lib].append(run_worker(lib, bench))
    print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
  print(f"{'benchmark':<20} {'hlox median':>12} {'hlox min':>12} {'jax median':>12} "
        f"{'jax min':>12} {'ratio(min)':>10} {'target':>7}")
  for bench in args.bench:
    h = results[bench]["hlox"]
    row = f"{bench:<20} {fmt(statistics.median(h), bench):>12} {fmt(min(h), bench):>12}"
    if have_jax:
      j = results[bench]["jax"]
      ratio = min(h) / min(j)
      target = TARGETS.get(bench)
      row += (f" {fmt(statistics.median(j), bench):>12} {fmt(min(j), bench):>12} {ratio:>10.2f}"
              f" {('<=' + str(target)) if target else '':>7}")
    print(row)
  if "per_example_grads_64_32_10" in results and "per_example_loop_64_32_10" in results:
    speedup = (min(results["per_example_loop_64_32_10"]["hlox"])
               / min(results["per_example_grads_64_32_10"]["hlox"]))
    print(f"hlox per-example gradients, vmap vs Python loop: {speedup:.1f}x faster "
          "(target >= 8x)")
  for fm, base in (("fastmath_numpy_sin", "eager_sin"), ("fastmath_jit_wrap_call", "jit_wrap_call")):
    if fm in results and base in results:
      extra = min(results[fm]["hlox"]) - min(results[base]["hlox"])
      print(f"hlox.fastmath cost over calling hlox directly, {fm}: {extra * 1e6:+.2f} us "
            "(target <= 1 us)")
  if "trace_lower_200" in results and "trace_lower_2000" in results:
    scale = min(results["trace_lower_2000"]["hlox"]) / min(results["trace_lower_200"]["hlox"])
    print(f"hlox trace+lower scaling 2000 ops / 200 ops: {scale:.1f}x (target <= 12x)")


if __name__ == "__main__":
  main()
