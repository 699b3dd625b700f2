#!/usr/bin/env bash
# Build what travels to a lent GPU machine beside the working tree (run here, where pip reaches PyPI):
#   .gpu/wheels/       the wheels clzoo needs that the GPU image lacks (benchmarks/gpu/wheels.py), for Python 3.12
#   .gpu/cifar10.tar.xz CIFAR-10's JPEG folder as one xz tar (the same bytes: 15.5 MB for the 50,000
#                       training images where the files take 47.4 MB, most of them repeated JPEG headers)
# and check that the tree plus .gpu/ fit the device tool's 64 MiB. The folder is replaced as a whole.
#
#   bash benchmarks/gpu/pack.sh [--data DIR] [--dest DIR] [--subset K] [--no-wheels]
#     --data    an image folder with train/ and test/ (default ../shared/data/cifar10)
#     --dest    where to write (default .gpu, ignored by git; the device call carries it)
#     --subset  only the first K images of each class and split (the dry run); 0: all (default)
#     --no-wheels  leave the wheels out (a dry run here, where keras is installed)
set -euo pipefail
cd "$(dirname "$0")/../.."
DATA=../shared/data/cifar10 DEST=.gpu SUBSET=0 WHEELS=1
PYTHON=${PYTHON:-python3}
while [ $# -gt 0 ]; do
  case "$1" in
    --data) DATA=$2; shift 2 ;;
    --dest) DEST=$2; shift 2 ;;
    --subset) SUBSET=$2; shift 2 ;;
    --no-wheels) WHEELS=0; shift ;;
    *) echo "pack.sh: unknown argument '$1' (expected --data DIR, --dest DIR, --subset K or --no-wheels)" >&2; exit 2 ;;
  esac
done
[[ "$SUBSET" =~ ^[0-9]+$ ]] || { echo "pack.sh: --subset takes a whole number of images per class, not '$SUBSET'" >&2; exit 2; }
for split in train test; do
  [ -d "$DATA/$split" ] || { echo "pack.sh: --data $DATA has no $split/ folder (expected DIR/{train,test}/<class>/<image>)" >&2; exit 2; }
done
NEW="$DEST.new"
rm -rf "$NEW" && mkdir -p "$NEW/wheels"
if [ "$WHEELS" = 1 ]; then
  "$PYTHON" benchmarks/gpu/wheels.py > "$NEW/wheels.txt"
  "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$NEW/wheels" -r "$NEW/wheels.txt"
fi
LIST=$(mktemp)
for split in train test; do
  for class in $(ls "$DATA/$split" | sort); do
    (cd "$DATA" && find "$split/$class" -type f | sort | awk -v k="$SUBSET" 'k == 0 || NR <= k') >> "$LIST"
  done
done
tar -C "$DATA" -cf - --transform 's,^,cifar10/,' -T "$LIST" | xz -T2 -6 > "$NEW/cifar10.tar.xz"
echo "$(wc -l < "$LIST") images packed"
rm -f "$LIST"
rm -rf "$DEST" && mv "$NEW" "$DEST"
tree=$(git ls-files -co --exclude-standard -z | xargs -0 stat -c %s 2>/dev/null | awk '{s+=$1} END {print s+0}')
pack=$(du -sb "$DEST" | cut -f1)
total=$((tree + pack)) limit=$((64 * 1024 * 1024))
awk -v t="$tree" -v p="$pack" -v d="$DEST" -v l="$limit" 'BEGIN {
  printf "tree %.1f MB + %s %.1f MB = %.1f MB of the 64 MiB (%.1f MB)\n", t / 1e6, d, p / 1e6, (t + p) / 1e6, l / 1e6 }'
if [ "$total" -gt "$limit" ]; then echo "pack.sh: over the device tool's 64 MiB: pack less (--subset)" >&2; exit 1; fi
echo "device call: command \"bash benchmarks/gpu/run.sh\", carry [\"$DEST\"], timeout_s 600"
