#!/usr/bin/env bash
# Proves the code-size gate can fail (issue 39): runs `size-table.sh --check` with a size tool
# that fails and with one that prints no sections, each first on PATH; both must make the
# gate fail. (Before, a failing tool read as 0 bytes of flash, under the 250 KB budget.)
# Prints a SKIP line and exits 0 when the gate itself skips (no thumbv7em target).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if ! rustup target list --installed 2>/dev/null | grep -qx thumbv7em-none-eabihf; then
  echo "SKIP: size gate self-test: target thumbv7em-none-eabihf is not installed"
  exit 0
fi
fake=$(mktemp -d)
trap 'rm -rf "$fake"' EXIT
for body in 'exit 3' 'echo "no sections here"'; do
  printf '#!/bin/sh\n%s\n' "$body" >"$fake/arm-none-eabi-size"
  chmod +x "$fake/arm-none-eabi-size"
  if PATH="$fake:$PATH" "$here/size-table.sh" --check >"$fake/out" 2>&1; then
    cat "$fake/out"
    echo "size gate self-test: a size tool doing '$body' passed the gate"
    exit 1
  fi
done
echo "size gate self-test: a failing and an empty size tool both fail the gate"
