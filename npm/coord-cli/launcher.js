// coord's npm launcher: runs the native coord binary of this machine's platform package
// (`@coord-cli/linux-x64`, ...; an optional dependency whose `os` and `cpu` match) with the
// arguments given. `install.js` puts that binary in place of `bin/coord` when the install runs
// scripts, and then this file is not used at all.
"use strict";

const fs = require("fs");
const path = require("path");
const { spawn } = require("child_process");

/** The platform packages, by `process.platform` and `process.arch`. */
const PACKAGES = {
  "linux x64": "@coord-cli/linux-x64",
  "linux arm64": "@coord-cli/linux-arm64",
};

function fail(message) {
  process.stderr.write(`error: ${message}\n`);
  process.exit(1);
}

/** The native binary: `COORD_BINARY` when set, else `bin/coord` of the platform package. */
function binary() {
  if (process.env.COORD_BINARY) return process.env.COORD_BINARY;
  const key = `${process.platform} ${process.arch}`;
  const pkg = PACKAGES[key];
  if (!pkg) {
    fail(
      `coord-cli has no prebuilt binary for ${key}; build coord from source: ` +
        "cargo install --git <coord's repository> (see docs/install.md)",
    );
  }
  try {
    return require.resolve(`${pkg}/bin/coord`);
  } catch {
    fail(
      `${pkg} is not installed: it is an optional dependency of coord-cli, left out when ` +
        "optional dependencies are (`--omit=optional`, `--no-optional`); install coord-cli again with them",
    );
  }
}

/** Whether an executable `coord` is on PATH (the hooks `coord init` wires run `coord`). */
function coordOnPath() {
  return (process.env.PATH || "").split(path.delimiter).some((dir) => {
    try {
      fs.accessSync(path.join(dir || ".", "coord"), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

const bin = binary();
const args = process.argv.slice(2);
const command = args.find((a) => !a.startsWith("-"));
if (command === "init" && !args.includes("--remove") && !coordOnPath()) {
  // `npx coord-cli init` wires hooks that run `coord`, which npx does not leave on PATH.
  process.stderr.write(
    "note: the hooks and MCP server `coord init` writes run `coord`, which is not on PATH: " +
      "install it with `npm i -g coord-cli` for them to work\n",
  );
}
if (typeof process.execve === "function") {
  // Node 22.15 and newer: become coord (same process, so the clients' hooks see coord itself).
  process.execve(bin, [bin, ...args], process.env);
}
// Older Node: coord runs as this process's child. It takes this process's parent for the one
// that ran it (the client whose hook this is), as if this launcher had become coord.
const child = spawn(bin, args, {
  stdio: "inherit",
  env: { ...process.env, COORD_LAUNCHER_PID: String(process.pid) },
});
const forwarded = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];
for (const sig of forwarded) {
  process.on(sig, () => child.kill(sig));
}
child.on("error", (e) => fail(`cannot run ${bin}: ${e.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // End the way coord ended.
    for (const sig of forwarded) process.removeAllListeners(sig);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code === null ? 1 : code);
});
