#!/usr/bin/env sh
# Builds the C example against include/ethlink.h and the static library of ethlink-ffi, and
# runs it. Exits non-zero when the build fails or the example observes anything unexpected.
#
#   examples/c/build.sh            # debug build of the library
#   PROFILE=release examples/c/build.sh
set -eu
cd "$(dirname "$0")/../.."
profile="${PROFILE:-debug}"
if [ "$profile" = release ]; then
  cargo build --quiet --locked --release -p ethlink-ffi
else
  cargo build --quiet --locked -p ethlink-ffi
fi
target="${CARGO_TARGET_DIR:-target}"
out="$target/$profile/examples-c"
mkdir -p "$out"
"${CC:-cc}" -std=c99 -Wall -Wextra -Wpedantic -Werror -O2 -I include \
  examples/c/link_pair.c "$target/$profile/libethlink_ffi.a" -lpthread -ldl -lm \
  -o "$out/link_pair"
"$out/link_pair"
