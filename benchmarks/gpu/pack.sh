#!/usr/bin/env bash
# Build what travels to a lent GPU machine beside the working tree (run here, where pip reaches PyPI):
#   .gpu/wheels/       the wheels clzoo needs that the GPU image lacks (benchmarks/gpu/wheels.py), for Python 3.12
#   .gpu/cifar10.tar.xz CIFAR-10's JPEG folder as one xz tar (the same bytes: 15.5 MB for the 50,000
#                       training images where the files take 47.4 MB, most of them repeated JPEG headers)
# and check that the tree plus .gpu/ fit the device tool's 64 MiB. The folder is replaced as a whole.
#
#   bash benchmarks/gpu/pack.sh [--data DIR] [--dest DIR] [--subset K] [--no-wheels]
#     --data    an image folder with train/ and test/ (default ../shared/data/cifar10 beside the checkout)
#     --dest    where to write (default .gpu in the checkout, ignored by git; the device call carries it);
#               only an earlier pack (it holds .clzoo-gpu-pack) or an empty folder is replaced
#     --subset  only the first K images of each class and split (the dry run); 0: all (default)
#     --no-wheels  leave the wheels out (a dry run here, where keras is installed)
# A relative --data / --dest is read from the current folder, as any command's path is.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DATA=$ROOT/../shared/data/cifar10 DEST=$ROOT/.gpu SUBSET=0 WHEELS=1
PYTHON=${PYTHON:-python3}
MARK=.clzoo-gpu-pack  # what tells an earlier pack (safe to replace) from a folder of the user's
die() { echo "pack.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --data|--dest)
      [ $# -ge 2 ] && [ -n "$2" ] || die "$1 takes a folder, not '${2-}'"
      # resolved here, before the cd below: a relative path is the caller's, not the checkout's
      if [ "$1" = --data ]; then DATA=$(realpath -ms -- "$2"); else DEST=$(realpath -ms -- "$2"); fi
      shift 2 ;;
    --subset) SUBSET=${2-}; shift $(($# >= 2 ? 2 : 1)) ;;
    --no-wheels) WHEELS=0; shift ;;
    *) die "unknown argument '$1' (expected --data DIR, --dest DIR, --subset K or --no-wheels)" ;;
  esac
done
cd "$ROOT"
[[ "$SUBSET" =~ ^[0-9]+$ ]] || die "--subset takes a whole number of images per class, not '$SUBSET'"
for split in train test; do
  [ -d "$DATA/$split" ] || die "--data $DATA has no $split/ folder (expected DIR/{train,test}/<class>/<image>)"
done

# 0 when $1 may be replaced: absent, an empty folder, or a pack (the marker, and only what a pack writes)
replaceable() {
  [ -e "$1" ] || [ -L "$1" ] || return 0
  [ -d "$1" ] && [ ! -L "$1" ] || return 1
  [ -z "$(ls -A "$1")" ] && return 0
  [ -f "$1/$MARK" ] && [ ! -L "$1/$MARK" ] || return 1
  # each name as a pack writes it: a folder named cifar10.tar.xz holding the user's files is theirs
  [ -z "$(find "$1" -mindepth 1 -maxdepth 1 ! \( -type f \( -name "$MARK" -o -name wheels.txt \
          -o -name cifar10.tar.xz \) \) ! \( -name wheels -type d \))" ] || return 1
  [ ! -d "$1/wheels" ] || [ -z "$(find "$1/wheels" -mindepth 1 ! \( -type f -name '*.whl' \))" ]
}
# resolved through links: --dest reached through a link into --data is inside it all the same
REAL_DATA=$(realpath -m -- "$DATA") REAL_DEST=$(realpath -m -- "$DEST")
case "$REAL_DEST/" in "$REAL_DATA"/*) die "--dest $DEST lies inside --data $DATA: the pack would pack itself" ;; esac
case "$REAL_DATA/" in "$REAL_DEST"/*) die "--data $DATA lies inside --dest $DEST, which the pack replaces" ;; esac
NEW="$DEST.new"
replaceable "$DEST" || die "--dest $DEST holds files that are not an earlier pack (no $MARK, or more): choose a new or empty folder"
replaceable "$NEW" || die "$NEW (the pack in progress beside --dest) holds files that are not a pack: move it away"
rm -rf "$NEW" && mkdir -p "$NEW/wheels"
echo "written by benchmarks/gpu/pack.sh: this folder is replaced as a whole by the next pack" > "$NEW/$MARK"
if [ "$WHEELS" = 1 ]; then
  "$PYTHON" benchmarks/gpu/wheels.py > "$NEW/wheels.txt"
  "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$NEW/wheels" -r "$NEW/wheels.txt"
fi
LIST=$(mktemp)
for split in train test; do  # NUL-separated: a class or file name may hold spaces
  while IFS= read -r -d '' class; do
    if [ "$SUBSET" = 0 ]; then
      (cd "$DATA" && find "$split/$class" -type f -print0 | sort -z) >> "$LIST"
    else
      # head stops reading early: the rest is drained, or sort dies of SIGPIPE under pipefail
      (cd "$DATA" && find "$split/$class" -type f -print0 | sort -z \
        | { head -z -n "$SUBSET"; cat > /dev/null; }) >> "$LIST"
    fi
  done < <(find "$DATA/$split" -mindepth 1 -maxdepth 1 -type d -printf '%P\0' | sort -z)
done
tar -C "$DATA" -cf - --null --transform 's,^,cifar10/,' -T "$LIST" | xz -T2 -6 > "$NEW/cifar10.tar.xz"
echo "$(tr -cd '\0' < "$LIST" | wc -c) images packed"
rm -f "$LIST"
rm -rf "$DEST" && mv "$NEW" "$DEST"
tree=$(git ls-files -co --exclude-standard -z | xargs -0 stat -c %s 2>/dev/null | awk '{s+=$1} END {print s+0}')
pack=$(du -sb "$DEST" | cut -f1)
total=$((tree + pack)) limit=$((64 * 1024 * 1024))
awk -v t="$tree" -v p="$pack" -v d="$DEST" -v l="$limit" 'BEGIN {
  printf "tree %.1f MB + %s %.1f MB = %.1f MB of the 64 MiB (%.1f MB)\n", t / 1e6, d, p / 1e6, (t + p) / 1e6, l / 1e6 }'
if [ "$total" -gt "$limit" ]; then echo "pack.sh: over the device tool's 64 MiB: pack less (--subset)" >&2; exit 1; fi
case "$DEST" in "$ROOT"/*) CARRY=${DEST#"$ROOT"/} ;; *) CARRY=$DEST ;; esac  # carry is relative to the checkout
echo "device call: command \"bash benchmarks/gpu/run.sh\", carry [\"$CARRY\"], timeout_s 600"
