// tests/egress/mcp-client.mjs — a real MCP client (the TypeScript SDK) launching a networked
// MCP server (@modelcontextprotocol/server-gitlab, pointed at the test host) the way an
// mcpServers entry does: command, args, and an env block. Usage:
//   node mcp-client.mjs ALLOWED|REFUSED COMMAND ARGS…
// The env block is this process's GITLAB_API_URL, GITLAB_PERSONAL_ACCESS_TOKEN, SSL_CERT_FILE.
// ALLOWED: initialize, tools/list, search_repositories finds the test project (the server's
// request reached the API with the real token). REFUSED: the same call fails, and quickly.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [mode, command, ...args] = process.argv.slice(2);
const env = {};
for (const k of ["GITLAB_API_URL", "GITLAB_PERSONAL_ACCESS_TOKEN", "SSL_CERT_FILE"]) if (process.env[k]) env[k] = process.env[k];
const transport = new StdioClientTransport({ command, args, env, stderr: "inherit" });
const client = new Client({ name: "codemode-egress-test", version: "1.0.0" });

function ok(cond, what) {
  console.log(`${cond ? "ok" : "FAIL"} ${what}`);
  if (!cond) process.exit(1);
}

await client.connect(transport);
ok(client.getServerVersion()?.name === "gitlab-mcp-server", `initialize (${client.getServerVersion()?.name})`);
const tools = (await client.listTools()).tools.map((t) => t.name);
ok(tools.includes("search_repositories"), `tools/list (${tools.length} tools)`);
const t0 = Date.now();
const r = await client.callTool({ name: "search_repositories", arguments: { search: "egress" } }).catch((e) => ({ isError: true, content: [{ text: String(e) }] }));
const text = (r.content || []).map((c) => c.text || "").join("\n");
if (mode === "ALLOWED") {
  ok(!r.isError && text.includes("codemode/egress-test"), "tools/call search_repositories reached the API with the real token");
} else {
  ok(r.isError && Date.now() - t0 < 10000, `tools/call search_repositories refused (${text.split("\n")[0]})`);
}
await client.close();
ok(true, "clean shutdown");
process.exit(0);
