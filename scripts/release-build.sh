#!/usr/bin/env bash
# The Linux release binaries: static (musl), one per target, built with the release profile of
# Cargo.toml and packed as dist/coord-VERSION-TARGET.tar.gz (coord, LICENSE, README.md) with
# dist/SHA256SUMS. npm/stage.sh puts them into the npm packages.
#
#   scripts/release-build.sh                      # x86_64 and aarch64
#   scripts/release-build.sh x86_64-unknown-linux-musl
#
# Cross targets (aarch64 on an x86-64 machine) link with the rust-lld that rustup ships: coord
# has no C code on Linux, and Rust's musl targets bring their own C library and start files. A
# linker set in CARGO_TARGET_<TRIPLE>_LINKER is used instead.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "error: cargo is required (install Rust with rustup)" >&2; exit 1; }

targets=("$@")
((${#targets[@]})) || targets=(x86_64-unknown-linux-musl aarch64-unknown-linux-musl)
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
target_dir=${CARGO_TARGET_DIR:-target}
host=$(rustc -vV | sed -n 's/^host: //p')
mkdir -p dist

for t in "${targets[@]}"; do
  case $t in
    *-linux-musl*) ;;
    *) echo "error: $t is not a Linux musl target (the release binaries are static)" >&2; exit 2 ;;
  esac
  rustup target add "$t" >/dev/null
  var="CARGO_TARGET_$(echo "$t" | tr '[:lower:]-' '[:upper:]_')_LINKER"
  if [ "${t%%-*}" != "${host%%-*}" ] && [ -z "${!var:-}" ]; then
    export "$var=rust-lld"
  fi
  cargo build --release --locked --target "$t"
  bin="$target_dir/$t/release/coord"
  # Static: no interpreter, no shared library.
  if command -v file >/dev/null && ! file "$bin" | grep -q 'statically linked\|static-pie linked'; then
    echo "error: $bin is not statically linked: $(file -b "$bin")" >&2
    exit 1
  fi
  stage=$(mktemp -d)
  cp "$bin" LICENSE README.md "$stage/"
  tar -C "$stage" -czf "dist/coord-$version-$t.tar.gz" coord LICENSE README.md
  rm -r "$stage"
  cp "$bin" "dist/coord-$t"
  echo "dist/coord-$version-$t.tar.gz: $(wc -c <"$bin") bytes ($(file -b "$bin" 2>/dev/null | cut -d, -f1,2))"
done
(cd dist && sha256sum coord-"$version"-*.tar.gz >SHA256SUMS)
