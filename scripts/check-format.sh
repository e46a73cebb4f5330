#!/bin/sh
# Formatting check against .clang-format: every C file of the git checkout,
# or with --changed BASE only those changed since the commit BASE; --fix
# formats them in place instead. The files scripts/gen_shmem_h.py writes are
# left to it (check-generated compares them). Skipped, with one line, where
# clang-format 14 (the version the tree is formatted with: Debian 12's) or
# the git history is missing, e.g. in a release tarball.
#   scripts/check-format.sh [--fix] [--changed BASE] [SRCDIR]
set -u
fix=0 base=""
while [ $# -gt 0 ]; do
    case $1 in
    --fix) fix=1; shift ;;
    --changed) [ $# -ge 2 ] || { echo "check-format: --changed needs a commit" >&2; exit 2; }
               base=$2; shift 2 ;;
    -*) echo "check-format: unknown option $1" >&2; exit 2 ;;
    *) break ;;
    esac
done
top=${1:-.}
cd "$top" || exit 2
if ! command -v clang-format >/dev/null 2>&1; then
    echo "check-format: skipped (no clang-format)"; exit 0
fi
major=$(clang-format --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
if [ "$major" != 14 ]; then
    echo "check-format: skipped (clang-format $major; the tree follows clang-format 14)"; exit 0
fi
if [ ! -e .git ] || ! git rev-parse --git-dir >/dev/null 2>&1; then
    echo "check-format: skipped (not a git checkout)"; exit 0
fi
if [ -n "$base" ]; then
    files=$(git diff --name-only --diff-filter=ACMR "$base" -- '*.c' '*.h')
else
    files=$(git ls-files '*.c' '*.h')
fi
bad=0 count=0
for f in $files; do
    case $f in shmem/shmem.h | shmem/pshmem.h | shmem/shmem_typed_*.c) continue ;; esac
    [ -f "$f" ] || continue
    count=$((count + 1))
    if [ $fix = 1 ]; then
        clang-format -i "$f"
    elif ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "check-format: $f is not formatted (scripts/check-format.sh --fix)"
        bad=1
    fi
done
[ $bad = 0 ] && echo "check-format: ok ($count files)"
exit $bad
