// A real MCP client (the TypeScript SDK) that launches its stdio server through codemode-run,
// as an MCP client's "mcpServers" entry would. Usage:
//   node client.mjs CHECKS|HANG COMMAND ARGS...
// CHECKS: initialize, tools/list, read a file from the read-only /data mount, a write that must
// fail, then close stdin (clean shutdown) and print the server's exit.
// HANG: initialize, print "READY <pid of codemode-run>", then wait forever (the orphan test
// SIGKILLs us).
// STEPS:list,read,write,… : the learn-mode sessions of issue 19 (see the STEPS branch).
// MEMORY-WRITE NAME: (@modelcontextprotocol/server-memory) create the entity NAME; fails if
// the server cannot store it. MEMORY-READ NAME: the graph must hold NAME (a second session).
// --entry FILE NAME in place of COMMAND ARGS: the server is the entry NAME of an MCP client's
// config FILE (.mcpServers or VS Code's .servers), launched as a client launches it: its
// command, its args and its env on top of the SDK's default environment (issue 29).
// FS:DIR (@modelcontextprotocol/server-filesystem serving DIR, read-write): list and read
// DIR/hello.txt, write DIR/written-PID.txt, and a read outside DIR is refused.
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

let [mode, command, ...args] = process.argv.slice(2);
let env;
if (command === "--entry") {
  const config = JSON.parse(readFileSync(args[0], "utf8"));
  const entry = (config.mcpServers || config.servers)[args[1]];
  command = entry.command;
  args = entry.args || [];
  env = { ...getDefaultEnvironment(), ...(entry.env || {}) };
}
const transport = new StdioClientTransport({ command, args, env, stderr: "inherit" });
const client = new Client({ name: "codemode-test-client", version: "1.0.0" });

function ok(cond, what) {
  if (!cond) {
    console.log(`FAIL ${what}`);
    process.exit(1);
  }
  console.log(`ok ${what}`);
}

const text = (r) => (r.content || []).map((c) => c.text || "").join("\n");

await client.connect(transport);
ok(client.getServerVersion()?.name !== undefined, `initialize (server ${client.getServerVersion()?.name})`);
if (mode.startsWith("STEPS:")) {
  // STEPS:a,b,c — the learn-mode sessions (tests/mcp/run.sh, issue 19) on /data/a (rw) and
  // /data/b (ro, never touched while learning). Each step must succeed, except the deny-*
  // ones, which must fail with the kernel's EACCES/EPERM in the tool's error text.
  const call = (name, args) => client.callTool({ name, arguments: args }).catch((e) => ({ isError: true, content: [{ text: String(e) }] }));
  const tools = (await client.listTools()).tools.map((t) => t.name);
  const read = tools.includes("read_text_file") ? "read_text_file" : "read_file";
  for (const step of mode.slice(6).split(",")) {
    let r;
    if (step === "list") {
      ok(tools.length > 0, `tools/list (${tools.length} tools)`);
      r = await call("list_directory", { path: "/data/a" });
      ok(!r.isError && text(r).includes("hello.txt"), "list_directory /data/a");
    } else if (step === "read") {
      r = await call(read, { path: "/data/a/hello.txt" });
      ok(!r.isError && text(r).includes("hello from the host"), "read /data/a/hello.txt");
    } else if (step === "write") {
      const name = `/data/a/written-${process.pid}.txt`;
      r = await call("write_file", { path: name, content: "written under codemode" });
      ok(!r.isError, `write_file ${name} (${text(r).slice(0, 100)})`);
      r = await call(read, { path: name });
      ok(!r.isError && text(r).includes("written under codemode"), "read back what was written");
    } else if (step === "mkdir-move") {
      const dir = `/data/a/dir-${process.pid}`;
      r = await call("create_directory", { path: dir });
      ok(!r.isError, `create_directory ${dir} (${text(r).slice(0, 100)})`);
      r = await call("write_file", { path: `${dir}/from.txt`, content: "to be moved" });
      ok(!r.isError, `write_file ${dir}/from.txt`);
      r = await call("move_file", { source: `${dir}/from.txt`, destination: `${dir}/to.txt` });
      ok(!r.isError, `move_file (${text(r).slice(0, 100)})`);
      r = await call("get_file_info", { path: `${dir}/to.txt` });
      ok(!r.isError, "get_file_info of the moved file");
    } else if (step === "deny-move") {
      // rename(2) was never seen while learning: the learned seccomp filter refuses it.
      const name = `/data/a/move-${process.pid}.txt`;
      r = await call("write_file", { path: name, content: "x" });
      ok(!r.isError, `write_file ${name}`);
      r = await call("move_file", { source: name, destination: `${name}.moved` });
      ok(r.isError && /EPERM|not permitted/i.test(text(r)), `move_file refused: ${text(r).slice(0, 120)}`);
    } else if (step === "deny-other") {
      // /data/b was never touched while learning: the learned Landlock layer refuses it.
      r = await call(read, { path: "/data/b/secret.txt" });
      ok(r.isError && /EACCES|permission denied/i.test(text(r)), `read /data/b refused: ${text(r).slice(0, 120)}`);
    } else {
      ok(false, `unknown step ${step}`);
    }
  }
  await client.close();
  ok(true, "clean shutdown (stdin closed)");
  process.exit(0);
} else if (mode.startsWith("FS:")) {
  const dir = mode.slice(3);
  const call = (name, a) => client.callTool({ name, arguments: a }).catch((e) => ({ isError: true, content: [{ text: String(e) }] }));
  const tools = (await client.listTools()).tools.map((t) => t.name);
  const read = tools.includes("read_text_file") ? "read_text_file" : "read_file";
  let r = await call("list_directory", { path: dir });
  ok(!r.isError && text(r).includes("hello.txt"), `list_directory ${dir}`);
  r = await call(read, { path: `${dir}/hello.txt` });
  ok(!r.isError && text(r).includes("hello from the host"), `read ${dir}/hello.txt`);
  const name = `${dir}/written-${process.pid}.txt`;
  r = await call("write_file", { path: name, content: "written under codemode" });
  ok(!r.isError, `write_file ${name} (${text(r).slice(0, 100)})`);
  console.log(`WROTE ${name}`);
  for (const outside of ["/etc/passwd", `${dir}/../outside.txt`]) {
    r = await call(read, { path: outside });
    ok(r.isError, `read ${outside} refused: ${text(r).slice(0, 100).replace(/\n/g, " ")}`);
  }
  await client.close();
  ok(true, "clean shutdown (stdin closed)");
  process.exit(0);
} else if (mode === "HANG") {
  console.log(`READY ${transport.pid}`);
  setInterval(() => {}, 1 << 30);
} else if (mode.startsWith("MEMORY-")) {
  const name = process.env.MEMORY_ENTITY || "codemode-test-entity";
  if (mode === "MEMORY-WRITE") {
    const r = await client.callTool({ name: "create_entities", arguments: { entities: [
      { name, entityType: "test", observations: ["written through codemode-run"] }] } }).catch((e) => ({ isError: true, content: [{ text: String(e) }] }));
    ok(!r.isError, `create_entities stored ${name} (${text(r).slice(0, 120).replace(/\n/g, " ")})`);
  } else {
    const r = await client.callTool({ name: "read_graph", arguments: {} });
    ok(!r.isError && text(r).includes(name), `read_graph in a new session holds ${name}`);
  }
  await client.close();
  process.exit(0);
} else {
  const tools = (await client.listTools()).tools.map((t) => t.name);
  ok(tools.includes("read_text_file") || tools.includes("read_file"), `tools/list (${tools.length} tools)`);
  const readTool = tools.includes("read_text_file") ? "read_text_file" : "read_file";
  const read = await client.callTool({ name: readTool, arguments: { path: "/data/hello.txt" } });
  ok(!read.isError && text(read).includes("hello from the host"), "tools/call read a file from the read-only mount");
  let writeFailed = false;
  try {
    const w = await client.callTool({ name: "write_file", arguments: { path: "/data/new.txt", content: "x" } });
    writeFailed = !!w.isError;
  } catch (e) {
    writeFailed = true;
  }
  ok(writeFailed, "tools/call write into the read-only mount fails");
  const escape = await client.callTool({ name: readTool, arguments: { path: "/etc/passwd" } }).catch((e) => ({ isError: true }));
  ok(escape.isError, "tools/call outside the allowed directory is refused");
  await client.close();
  ok(true, "clean shutdown (stdin closed)");
  process.exit(0);
}
