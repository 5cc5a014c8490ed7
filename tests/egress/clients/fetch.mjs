// node clients/fetch.mjs URL [HEADER:VALUE] — Node's built-in fetch (undici), which ignores
// HTTP(S)_PROXY on Node 20: it reaches the broker only by transparent capture. Prints
// "STATUS BODY" or "ERROR CODE MESSAGE" and exits 0 / 1.
const [url, header] = process.argv.slice(2);
const headers = {};
if (header) {
  const i = header.indexOf(":");
  headers[header.slice(0, i)] = header.slice(i + 1);
}
try {
  const r = await fetch(url, { headers, signal: AbortSignal.timeout(15000) });
  console.log(r.status, (await r.text()).trim());
  process.exit(0);
} catch (e) {
  const c = e.cause || e;
  console.log("ERROR", c.code || c.name, c.message);
  process.exit(1);
}
