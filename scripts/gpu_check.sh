#!/usr/bin/env bash
# The jax backend on a GPU: its tests (the GPU test included, which CI skips) and the loop
# benchmarks beside onnxruntime (CPU). Run on a machine where JAX sees a CUDA device; wheels of
# packages missing there may lie in .whl/ (installed into /tmp/site first).
set -uo pipefail
cd "$(dirname "$0")/.."
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null 2>&1 ||
    export PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
nvidia-smi -L
python3 -c "import jax; print('jax', jax.__version__, jax.devices())"
python3 -m pytest -q -p no:cacheprovider tests/backends/jax/test_jax.py "$@"
PYTHONUNBUFFERED=1 python3 benchmarks/compare.py --backends compiled,jax --no-first-run \
    --case while --case nested --case scan-sum --case lstm-loop-small --case lstm-loop-medium \
    --case lstm-loop-large --repeats 5 --warmup 1
