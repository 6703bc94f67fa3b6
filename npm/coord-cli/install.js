// postinstall: put this platform's native coord in place of `bin/coord` (the JS launcher), as
// esbuild does: each `coord` call then starts no node, and the processes a client's hooks run
// are coord itself. Anything unexpected leaves the launcher in place, which works as well.
"use strict";

const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

const PACKAGES = {
  "linux x64": "@coord-cli/linux-x64",
  "linux arm64": "@coord-cli/linux-arm64",
};

function main() {
  const pkg = PACKAGES[`${process.platform} ${process.arch}`];
  if (!pkg) return;
  let native;
  try {
    native = require.resolve(`${pkg}/bin/coord`);
  } catch {
    return; // not installed (yet): the launcher finds it at run time
  }
  // The binary runs here and is the version of this package.
  const version = require("./package.json").version;
  const out = execFileSync(native, ["--version"], { encoding: "utf8", timeout: 30000 });
  if (!out.startsWith(`coord ${version}`)) return;
  const target = path.join(__dirname, "bin", "coord");
  const temp = `${target}.${process.pid}.tmp`;
  try {
    fs.linkSync(native, temp);
  } catch {
    fs.copyFileSync(native, temp);
  }
  fs.chmodSync(temp, 0o755);
  fs.renameSync(temp, target);
}

try {
  main();
} catch {
  // The launcher stays.
}
