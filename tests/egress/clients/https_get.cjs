// node clients/https_get.cjs URL — Node's https.get (or http.get), no proxy support at all.
const url = new URL(process.argv[2]);
const mod = require(url.protocol === "https:" ? "https" : "http");
const req = mod.get(url, { timeout: 15000 }, (res) => {
  let body = "";
  res.on("data", (d) => (body += d));
  res.on("end", () => {
    console.log(res.statusCode, body.trim());
    process.exit(0);
  });
});
req.on("timeout", () => req.destroy(Object.assign(new Error("timeout"), { code: "TIMEOUT" })));
req.on("error", (e) => {
  console.log("ERROR", e.code, e.message);
  process.exit(1);
});
