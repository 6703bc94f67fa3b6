#!/usr/bin/env node
// Benchmark: what the plugin's hook costs as the agent clients run it, against a hook that does
// nothing (`true`).
//
// Claude Code, Codex, Gemini CLI and Copilot CLI are Node programs (Codex's hooks run from its
// own process the same way): a command hook is a child process started through the shell
// (`spawn(command, { shell: true })`), the event's JSON written to its stdin, its stdout
// collected, and the client waits for it to close. This script does exactly that, from one Node
// process standing in for the client, in a repository nobody set up (no `coord init`; the first
// call adopts it), one session's turn per round in interleaved order so machine load hits every
// case alike; wall-clock medians per hook call, and the ratio to `true` as the hook:
//
//   `true`                           the hook that does nothing
//   SessionStart                     clock in, the context
//   PreToolUse of Bash (`ls`)        the shell tool: a heartbeat
//   PreToolUse of Write, free file   lock taken (with `.bak`)
//   PreToolUse of Write, own file    the same file again
//   PostToolUse of Write             heartbeat and renewal
//   PreToolUse of Write, held file   another agent holds it: denied (`--wait 0`)
//   Stop                             the turn's locks released
//   SessionEnd                       clock out
//   PreToolUse of Write, turned off  `git config coord.enabled false`
//
// Usage: node bench/plugin_hook_client.mjs COORD [ROUNDS]   (ROUNDS default 200). Needs git.
// Goal: a call at most 1.5x `true` as the hook.
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir, loadavg, cpus } from "node:os";
import { join } from "node:path";

const coord = process.argv[2];
const rounds = Number(process.argv[3] || 200);
if (!coord) {
  console.error("usage: node bench/plugin_hook_client.mjs COORD [ROUNDS]");
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

const on = repo("on", false);
const off = repo("off", true);
execFileSync(coord, ["-a", "holder", "lock", "held.txt"], { cwd: on, stdio: "pipe" });

const payload = (d, event, tool, args) => {
  const p = { hook_event_name: event, session_id: "c1ient00-0000", cwd: d };
  if (tool) Object.assign(p, { tool_name: tool, tool_input: args });
  if (event === "SessionStart") p.source = "startup";
  if (event === "Stop") p.stop_hook_active = false;
  if (event === "SessionEnd") p.reason = "exit";
  return JSON.stringify(p);
};
const write = (d, f) => payload(d, "PreToolUse", "Write", { file_path: join(d, f), content: "x" });
const hook = `${coord} hook claude --plugin`;
const cases = [
  ["`true` as the hook", "true", write(on, "a.txt"), null],
  ["SessionStart (clock in, the context)", hook, payload(on, "SessionStart"), "additionalContext"],
  ["PreToolUse of Bash (`ls`): heartbeat", hook, payload(on, "PreToolUse", "Bash", { command: "ls" }), null],
  ["PreToolUse of Write, free file: lock", hook, write(on, "a.txt"), null],
  ["PreToolUse of Write, own file: renewal", hook, write(on, "a.txt"), null],
  ["PostToolUse of Write: heartbeat, renewal", hook,
    payload(on, "PostToolUse", "Write", { file_path: join(on, "a.txt"), content: "x" }), null],
  ["PreToolUse of Write, held file: denied", `${hook} --wait 0`, write(on, "held.txt"), "deny"],
  ["Stop: release", hook, payload(on, "Stop"), null],
  ["SessionEnd: clock out", hook, payload(on, "SessionEnd"), null],
  ["PreToolUse of Write, turned off", hook, write(off, "a.txt"), null],
];

// One hook call as a client makes it: through the shell, payload on stdin, stdout collected.
function once(cmd, input, want) {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    const child = spawn(cmd, { shell: true, cwd: on, stdio: ["pipe", "pipe", "pipe"] });
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

const times = cases.map(() => []);
for (let warm = 0; warm < 3; warm++) {
  for (const [, cmd, input, want] of cases) await once(cmd, input, want);
}
if (!existsSync(join(on, ".coord"))) throw new Error("the plugin did not adopt the repository");
if (existsSync(join(off, ".coord"))) throw new Error("a turned-off repository got .coord/");
const load0 = loadavg()[0];
for (let r = 0; r < rounds; r++) {
  for (let i = 0; i < cases.length; i++) {
    const [, cmd, input, want] = cases[i];
    times[i].push(await once(cmd, input, want));
  }
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const base = median(times[0]);
console.log(`${new Date().toISOString().slice(0, 16)} UTC; ${cpus().length} cores; load ` +
  `${load0.toFixed(2)} at the start, ${loadavg()[0].toFixed(2)} at the end; ${rounds} rounds; ` +
  `node ${process.version}`);
console.log();
console.log("| one hook call, as a Node client runs it | wall median | / `true` |");
console.log("|---|---|---|");
cases.forEach(([name], i) => {
  const m = median(times[i]);
  console.log(`| ${name} | ${m.toFixed(2)} ms | ${(m / base).toFixed(2)}x |`);
});
