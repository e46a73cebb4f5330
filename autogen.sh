#!/bin/sh
# Regenerates configure and Makefile.in from configure.ac and Makefile.am.
set -e
cd "$(dirname "$0")"
autoreconf --install --force -Wno-portability >/dev/null
echo "autogen: now run ./configure"
