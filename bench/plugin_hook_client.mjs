#!/usr/bin/env node
// Benchmark: what the plugin's hook costs as the agent clients run it, against a hook that does
// nothing (`true`).
//
// Claude Code, Codex, Gemini CLI and Copilot CLI start a command hook as a child process through
// the shell (`spawn(command, { shell: true })` or `bash -c`), write the event's JSON to its
// stdin, collect its stdout and wait for it to close. This script does exactly that, from one
// Node process standing in for the client, with the very command the plugin registers (read from
// what `coord plugin write --client claude` writes), in a repository nobody set up (no `coord
// init`; the first call adopts it). One session's turn per round; with several builds given,
// each works in its own repositories and the builds take turns round by round, so that the
// machine's load weighs on all alike. Wall-clock medians per hook call, and the ratio to `true`
// as the hook:
//
//   `true`                           the hook that does nothing
//   SessionStart                     clock in, the context
//   PreToolUse of Bash (`ls`)        the shell tool: a heartbeat, the shell-edit record
//   PreToolUse of Write, free file   lock taken (with `.bak`)
//   PreToolUse of Write, own file    the same file again
//   PostToolUse of Write             heartbeat and renewal
//   PreToolUse of Write, held file   another agent holds it: denied (`--wait 0`)
//   Stop                             the turn's locks released
//   SessionEnd                       clock out
//   PreToolUse of Write, turned off  `git config coord.enabled false`
//
// Usage: node bench/plugin_hook_client.mjs COORD[,COORD...] [ROUNDS]   (ROUNDS default 200).
// Needs git. Floor: a call at most 2x `true` as the hook.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir, loadavg, cpus } from "node:os";
import { join, resolve } from "node:path";

const builds = (process.argv[2] || "").split(",").filter(Boolean).map((b) => resolve(b));
const rounds = Number(process.argv[3] || 200);
if (!builds.length) {
  console.error("usage: node bench/plugin_hook_client.mjs COORD[,COORD...] [ROUNDS]");
  process.exit(2);
}
const ws = mkdtempSync(join(tmpdir(), "coord-client-bench-"));
process.on("exit", () => rmSync(ws, { recursive: true, force: true }));

function repo(name, off) {
  const d = join(ws, name);
  mkdirSync(d);
  const git = (...a) => execFileSync("git", ["-C", d, ...a], { stdio: "pipe" });
  git("init", "-q");
  for (const f of ["a.txt", "held.txt"]) writeFileSync(join(d, f), "one\n");
  git("add", "a.txt", "held.txt");
  git("-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-qm", "init");
  if (off) git("config", "coord.enabled", "false");
  return d;
}

// The command the plugin registers for Claude Code's PreToolUse (every event runs the same).
function pluginCommand(coord, i) {
  const dir = join(ws, `plugin${i}`);
  execFileSync(coord, ["plugin", "write", "--client", "claude", dir], { stdio: "pipe" });
  const hooks = JSON.parse(readFileSync(join(dir, "claude/coord/hooks/hooks.json"), "utf8"));
  return hooks.hooks.PreToolUse[0].hooks[0].command;
}

const payload = (d, event, tool, args) => {
  const p = { hook_event_name: event, session_id: "c1ient00-0000", cwd: d };
  if (tool) Object.assign(p, { tool_name: tool, tool_input: args });
  if (event === "SessionStart") p.source = "startup";
  if (event === "Stop") p.stop_hook_active = false;
  if (event === "SessionEnd") p.reason = "exit";
  return JSON.stringify(p);
};
const names = [
  "`true` as the hook",
  "SessionStart (clock in, the context)",
  "PreToolUse of Bash (`ls`): heartbeat",
  "PreToolUse of Write, free file: lock",
  "PreToolUse of Write, own file: renewal",
  "PostToolUse of Write: heartbeat, renewal",
  "PreToolUse of Write, held file: denied",
  "Stop: release",
  "SessionEnd: clock out",
  "PreToolUse of Write, turned off",
];
const sets = builds.map((coord, i) => {
  const on = repo(`on${i}`, false);
  const off = repo(`off${i}`, true);
  execFileSync(coord, ["-a", "holder", "lock", "held.txt"], { cwd: on, stdio: "pipe" });
  const hook = pluginCommand(coord, i);
  const write = (d, f) => payload(d, "PreToolUse", "Write", { file_path: join(d, f), content: "x" });
  // [command, stdin, what stdout must hold (null: no denial)]
  const cases = [
    ["true", write(on, "a.txt"), null],
    [hook, payload(on, "SessionStart"), "additionalContext"],
    [hook, payload(on, "PreToolUse", "Bash", { command: "ls" }), null],
    [hook, write(on, "a.txt"), null],
    [hook, write(on, "a.txt"), null],
    [hook, payload(on, "PostToolUse", "Write", { file_path: join(on, "a.txt"), content: "x" }), null],
    [`${hook} --wait 0`, write(on, "held.txt"), "deny"],
    [hook, payload(on, "Stop"), null],
    [hook, payload(on, "SessionEnd"), null],
    [hook, write(off, "a.txt"), null],
  ];
  return { coord, hook, on, off, cases };
});

// One hook call as a client makes it: through the shell, payload on stdin, stdout collected.
function once(cmd, input, want, cwd) {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    const child = spawn(cmd, { shell: true, cwd, stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (b) => (out += b));
    child.stderr.on("data", (b) => (err += b));
    child.on("error", reject);
    child.on("close", (code) => {
      const dt = Number(process.hrtime.bigint() - t) / 1e6;
      const ok = code === 0 && !err.includes("warning") &&
        (want ? out.includes(want) : !out.includes("deny"));
      if (!ok) reject(new Error(`\`${cmd}\` failed: ${out} ${err}`));
      else resolve(dt);
    });
    // A hook that does not read its input (`true`) closes the pipe first: clients ignore that.
    child.stdin.on("error", () => {});
    child.stdin.end(input);
  });
}

const times = sets.map(() => names.map(() => []));
for (let round = -3; round < rounds; round++) {
  for (let b = 0; b < sets.length; b++) {
    const { cases, on } = sets[b];
    for (let i = 0; i < cases.length; i++) {
      const [cmd, input, want] = cases[i];
      const dt = await once(cmd, input, want, on);
      if (round >= 0) times[b][i].push(dt);
    }
  }
  if (round === -1) {
    for (const { on, off } of sets) {
      if (!existsSync(join(on, ".coord"))) throw new Error("the plugin did not adopt the repository");
      if (existsSync(join(off, ".coord"))) throw new Error("a turned-off repository got .coord/");
    }
  }
  if (round === -1) var load0 = loadavg()[0];
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
console.log(`${new Date().toISOString().slice(0, 16)} UTC; ${cpus().length} cores; load ` +
  `${load0.toFixed(2)} at the start, ${loadavg()[0].toFixed(2)} at the end; ${rounds} rounds; ` +
  `node ${process.version}`);
for (const { coord, hook } of sets) console.log(`- \`${coord}\`: the hook command \`${hook}\``);
console.log();
const head = sets.length === 1 ? ["wall median", "/ `true`"] :
  sets.flatMap((_, b) => [`${b + 1}: median`, `${b + 1}: / \`true\``]);
console.log(`| one hook call, as a Node client runs it | ${head.join(" | ")} |`);
console.log(`|---|${head.map(() => "---").join("|")}|`);
names.forEach((name, i) => {
  const cells = sets.flatMap((_, b) => {
    const m = median(times[b][i]);
    return [`${m.toFixed(2)} ms`, `${(m / median(times[b][0])).toFixed(2)}x`];
  });
  console.log(`| ${name} | ${cells.join(" | ")} |`);
});
