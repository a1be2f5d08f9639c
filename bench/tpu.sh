#!/usr/bin/env bash
# hlox on a TPU in one go (a machine with libtpu, JAX and jaxlib installed, no network):
# the TPU tests, a probe of ~35 programs run by hlox and by JAX on the TPU with their
# results compared, then the probe's timings. One program holds the chip at a time.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
OUT=${OUT:-/tmp}
PY=${PYTHON:-python3}
echo "== tests on the TPU"
timeout 300 $PY -m pytest -q -p no:cacheprovider -rfE tests/test_tpu.py 2>&1 | tail -30
echo "== probe: hlox, then JAX, on the TPU"
timeout 200 $PY bench/tpu_probe.py hlox > "$OUT/probe_hlox.log" 2>&1
timeout 200 $PY bench/tpu_probe.py jax > "$OUT/probe_jax.log" 2>&1
$PY bench/tpu_compare.py
grep -h "^TIME" "$OUT/probe_hlox.log" | sed 's/^/hlox /'
grep -h "^TIME" "$OUT/probe_jax.log" | sed 's/^/jax  /'
