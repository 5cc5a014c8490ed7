// scripts/mcp-hello.mjs COMMAND ARGS… — the quick start's MCP client (the MCP TypeScript SDK):
// starts COMMAND as a stdio MCP server, as an MCP client's "mcpServers" entry would, then
// prints the server's name, its tools and what its read tool returns for /data/hello.txt.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
const client = new Client({ name: "codemode-quickstart", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args, stderr: "inherit" }));
console.log(`server:      ${client.getServerVersion()?.name} ${client.getServerVersion()?.version}`);
const tools = (await client.listTools()).tools.map((t) => t.name);
console.log(`tools:       ${tools.join(" ")}`);
const tool = tools.includes("read_text_file") ? "read_text_file" : "read_file";
const r = await client.callTool({ name: tool, arguments: { path: "/data/hello.txt" } });
console.log(`${tool}:  ${(r.content || []).map((c) => c.text).join("").trim()}`);
const w = await client.callTool({ name: "write_file", arguments: { path: "/data/x", content: "x" } }).catch((e) => ({ isError: true }));
console.log(`write_file:  ${w.isError ? "refused (read-only mount)" : "succeeded?!"}`);
await client.close();
