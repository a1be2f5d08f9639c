#!/usr/bin/env bash
# hlox on an NVIDIA GPU in one go, in under 8 minutes: install what is needed, run the GPU
# tests (and a few platform-independent suites, which run on the GPU since it is the default
# platform there), then the GPU benchmarks against JAX on the same machine; prints one table.
#
#   bash bench/gpu.sh            # with network: pip installs hlox[cuda12,test] and jax[cuda12]
#
# On a machine without network, wheels in .whl/ are installed first (pip download them
# elsewhere: jax-cuda12-pjrt, jax-cuda12-plugin and jaxlib of the version hlox pins); without
# them the installed jaxlib and CUDA plugin are used as they are (their versions are printed;
# hlox refuses a plugin whose version differs from jaxlib's).
#
# To try the script's steps on a CPU-only machine: HLOX_GPU_SH_PLATFORM=cpu skips the install
# and benchmarks on the CPU (the GPU tests then skip, naming the reason).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
LOG=${OUT:-/tmp}/hlox_gpu.log
: > "$LOG"
step() { echo; echo "== $*" | tee -a "$LOG"; }

PLATFORM=${HLOX_GPU_SH_PLATFORM:-cuda}
step "install"
if [ "$PLATFORM" = cpu ]; then
  echo "(skipped: HLOX_GPU_SH_PLATFORM=cpu)"
elif ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/hlox_site \
    .whl/*.whl 2>&1 | tail -2
  export PYTHONPATH=/tmp/hlox_site${PYTHONPATH:+:$PYTHONPATH}
elif timeout 180 $PY -m pip install -q -e '.[cuda12,test]' 'jax[cuda12]==0.10.2' 2>&1 | tail -2; then
  :
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
$PY - <<'PYEOF' 2>&1 | tee -a "$LOG"
import importlib.metadata as md, jaxlib, hlox
for dist in ("jax-cuda12-pjrt", "jax-cuda13-pjrt", "jax"):
  try:
    print(f"{dist} {md.version(dist)}")
  except md.PackageNotFoundError:
    pass
print(f"jaxlib {jaxlib.__version__}; hlox default backend {hlox.default_backend()}; "
      f"devices {hlox.devices()}")
PYEOF

step "tests on the GPU"
timeout 200 $PY -m pytest -q -p no:cacheprovider -m "gpu or not slow" tests/test_gpu.py \
  tests/test_plugins.py tests/test_dlpack.py tests/test_lax_elementwise.py \
  tests/test_autodiff.py tests/test_random.py tests/test_control_flow.py 2>&1 \
  | tail -25 | tee -a "$LOG"

step "benchmarks (hlox / JAX on the GPU, ratio of minimums over 5 alternating rounds)"
timeout 330 $PY bench/run.py --platform "$PLATFORM" --rounds 5 --bench grad_mlp_step convnet_step \
  per_example_grads_64_32_10 jit_dispatch gpu_random_normal_1e7 gpu_solve_2048 \
  gpu_cholesky_2048 gpu_batched_matmul_64x512 2>&1 | grep -v "^round" | tee -a "$LOG"
echo "(log: $LOG)"
