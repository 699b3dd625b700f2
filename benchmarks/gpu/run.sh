#!/usr/bin/env bash
# One call on a lent GPU machine: the fused kernels checked and timed, kernel="auto" inside fit,
# the SupCon airbench recipe trained on JAX (float32, mixed_bfloat16) and torch, the file stream's
# images/s. Every step writes to $OUT as it finishes (benchmarks/gpu/steps.py); see README.md here.
#
#   bash benchmarks/gpu/pack.sh                  # here, first: wheels + CIFAR-10 into .gpu/
#   device run: command "bash benchmarks/gpu/run.sh", carry [".gpu"], timeout_s 600
#   bash benchmarks/gpu/run.sh --dry             # here: the CPU, interpreters, TensorFlow hidden
#
# Environment: OUT (default /tmp/clzoo-gpu-out), PYTHON (default python3), CLZOO_GPU_PACK (default .gpu).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
PACK=${CLZOO_GPU_PACK:-.gpu}
OUT=${OUT:-/tmp/clzoo-gpu-out}
PYTHON=${PYTHON:-python3}
if [ ! -f "$PACK/cifar10.tar.xz" ]; then
  echo "run.sh: $PACK/cifar10.tar.xz is missing: run bash benchmarks/gpu/pack.sh first (and carry $PACK)" >&2
  exit 2
fi
DRY=0
[ "${1:-}" = "--dry" ] && DRY=1
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/clzoo-gpu.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# the wheels are Python 3.12's, for the GPU machine: a dry run here uses this Python's packages
if [ "$DRY" = 0 ] && compgen -G "$PACK/wheels/*.whl" >/dev/null; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$WORK/site" "$PACK"/wheels/*.whl || { echo "run.sh: the carried wheels did not install" >&2; exit 1; }
  export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [ "$DRY" = 1 ]; then
  export PYTHONPATH="$PWD/tests/hide_tensorflow:$PYTHONPATH" TRITON_INTERPRET=1 CLZOO_PALLAS_INTERPRET=1
fi
# Python's tarfile, not tar -J: the GPU image may lack the xz program
"$PYTHON" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' \
  "$PACK/cifar10.tar.xz" "$WORK/data" || { echo "run.sh: the data did not unpack" >&2; exit 1; }
"$PYTHON" benchmarks/gpu/steps.py --data "$WORK/data/cifar10" --work "$WORK" --out "$OUT" "$@"
