#!/usr/bin/env bash
# The npm packages, packed: coord-cli (the launcher) and one @coord-cli/<platform> package per
# Linux binary that scripts/release-build.sh left in dist/. Each is staged in
# dist/npm/stage/<name> (with LICENSE, the binary, the version of Cargo.toml) and packed with
# `npm pack` into dist/npm/*.tgz; nothing is published.
#
#   scripts/release-build.sh && npm/stage.sh
#
# A platform whose binary is missing is left out, saying so; with no binary at all this fails.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v npm >/dev/null || { echo "error: npm is required" >&2; exit 1; }
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
out=dist/npm
rm -rf "$out"
mkdir -p "$out/stage"

# platform package : Rust target
platforms="linux-x64:x86_64-unknown-linux-musl linux-arm64:aarch64-unknown-linux-musl"
staged=0
for entry in $platforms; do
  name=${entry%%:*} target=${entry#*:}
  bin=dist/coord-$target
  if [ ! -f "$bin" ]; then
    echo "note: $bin is missing (scripts/release-build.sh $target): @coord-cli/$name left out" >&2
    continue
  fi
  dir=$out/stage/$name
  cp -r "npm/platforms/$name" "$dir"
  mkdir -p "$dir/bin"
  cp "$bin" "$dir/bin/coord"
  chmod 755 "$dir/bin/coord"
  cp LICENSE "$dir/"
  staged=$((staged + 1))
done
((staged)) || { echo "error: no binary in dist/: run scripts/release-build.sh first" >&2; exit 1; }

cp -r npm/coord-cli "$out/stage/coord-cli"
cp LICENSE "$out/stage/coord-cli/"
# Every package at the version of Cargo.toml, the launcher's platform packages at exactly it.
for pkg in "$out"/stage/*/package.json; do
  node -e '
    const fs = require("fs");
    const [file, version] = process.argv.slice(1);
    const p = JSON.parse(fs.readFileSync(file, "utf8"));
    p.version = version;
    for (const dep of Object.keys(p.optionalDependencies || {})) p.optionalDependencies[dep] = version;
    fs.writeFileSync(file, JSON.stringify(p, null, 2) + "\n");
  ' "$pkg" "$version"
done
for dir in "$out"/stage/*/; do
  npm pack --silent --pack-destination "$out" "./$dir" >/dev/null
done
ls -l "$out"/*.tgz
