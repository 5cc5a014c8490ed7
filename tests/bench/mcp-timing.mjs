// tests/bench/mcp-timing.mjs SPEC.json — MCP start-up timings, several server commands side by
// side, interleaved (round r runs every command once, in turn), raw JSON-RPC over stdio:
//   "spawn": spawn → the `initialize` response (the time an MCP client waits for a server);
//   "call":  spawn → initialize → one tools/call → response → stdin closed → exit (a fresh
//            container per request), and "session": the same tools/call N times in one server.
// SPEC: {"rounds": 20, "calls": 20, "commands": {"name": ["cmd", "arg"…]…},
//        "tool": {"name": "list_allowed_directories", "arguments": {}}}
// Prints one JSON object: per command, the medians and the raw samples in ms.
import { spawn } from "node:child_process";
import fs from "node:fs";

const spec = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const init = { jsonrpc: "2.0", id: 1, method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "codemode-bench", version: "1" } } };
const initialized = { jsonrpc: "2.0", method: "notifications/initialized" };
const call = (id) => ({ jsonrpc: "2.0", id, method: "tools/call", params: spec.tool });

function session(cmd, calls) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const child = spawn(cmd[0], cmd.slice(1), { stdio: ["pipe", "pipe", "ignore"] });
    let buf = "", tInit = null, done = 0, tCalls = null;
    const send = (m) => child.stdin.write(JSON.stringify(m) + "\n");
    child.stdout.on("data", (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        let m;
        try { m = JSON.parse(line); } catch { continue; }
        if (m.id === 1) {
          tInit = process.hrtime.bigint();
          if (calls === 0) { child.stdin.end(); continue; }
          send(initialized);
          send(call(2));
        } else if (typeof m.id === "number" && m.id >= 2) {
          if (m.error || m.result?.isError) reject(new Error(`${cmd.join(" ")}: tools/call failed: ${line.slice(0, 200)}`));
          if (++done === calls) { tCalls = process.hrtime.bigint(); child.stdin.end(); } else send(call(m.id + 1));
        }
      }
    });
    child.on("error", reject);
    child.on("exit", () => {
      const tExit = process.hrtime.bigint();
      if (tInit === null) return reject(new Error(`${cmd.join(" ")}: no initialize response`));
      const ms = (a, b) => Number(b - a) / 1e6;
      resolve({ init: ms(t0, tInit), calls: tCalls ? ms(tInit, tCalls) : 0, total: ms(t0, tExit) });
    });
    send(init);
  });
}

const median = (a) => { const s = [...a].sort((x, y) => x - y); const n = s.length; return n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : NaN; };
const out = {};
const names = Object.keys(spec.commands);
for (const n of names) out[n] = { spawn: [], call: [], session: [] };
for (let r = 0; r < spec.rounds; r++) {
  for (const n of names) {
    const cmd = spec.commands[n];
    out[n].spawn.push((await session(cmd, 0)).init);
    if (spec.calls) {
      out[n].call.push((await session(cmd, 1)).total);
      if (r < Math.max(1, Math.floor(spec.rounds / 5))) {
        const s = await session(cmd, spec.calls);
        out[n].session.push(s.calls / spec.calls);
      }
    }
  }
}
const result = {};
for (const n of names) {
  result[n] = { spawn_ms: median(out[n].spawn), call_ms: median(out[n].call), per_call_in_session_ms: median(out[n].session), samples: out[n] };
}
console.log(JSON.stringify(result));
