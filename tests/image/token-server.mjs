// token-server.mjs PORT TLS_CERT TLS_KEY SIGN_KEY SIGN_CERT USER:PASS — a Docker registry token
// service for the tests (distribution's "token" auth): GET /token?service=…&scope=repository:NAME:ACTIONS
// with Basic USER:PASS answers {"token": JWT} granting the asked actions; anonymous requests get
// pull on repositories under public/ only, anything else a 401. The JWT is RS256, signed with
// SIGN_KEY, its x5c header carrying SIGN_CERT (which the registry's rootcertbundle holds).
// Every request is appended to $TOKEN_LOG as one line, so tests can see who asked for what.
import https from 'node:https';
import fs from 'node:fs';
import crypto from 'node:crypto';

const [port, tlsCert, tlsKey, signKey, signCert, userpass] = process.argv.slice(2);
const key = fs.readFileSync(signKey);
const der = crypto.createPublicKey(fs.readFileSync(signCert)); // validates the file
void der;
const certDer = Buffer.from(
  fs.readFileSync(signCert, 'utf8').replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
const b64u = (b) => Buffer.from(b).toString('base64url');

function token(service, access, sub) {
  const now = Math.floor(Date.now() / 1000);
  const header = { typ: 'JWT', alg: 'RS256', x5c: [certDer.toString('base64')] };
  const claims = { iss: 'cm-test-issuer', sub, aud: service, exp: now + 600, nbf: now - 10, iat: now,
                   jti: crypto.randomBytes(8).toString('hex'), access };
  const input = b64u(JSON.stringify(header)) + '.' + b64u(JSON.stringify(claims));
  const sig = crypto.sign('sha256', Buffer.from(input), key);
  return input + '.' + b64u(sig);
}

https.createServer({ cert: fs.readFileSync(tlsCert), key: fs.readFileSync(tlsKey) }, (req, res) => {
  const url = new URL(req.url, 'https://x');
  const auth = req.headers.authorization || '';
  const authed = auth.startsWith('Basic ') && Buffer.from(auth.slice(6), 'base64').toString() === userpass;
  if (process.env.TOKEN_LOG)
    fs.appendFileSync(process.env.TOKEN_LOG, `${url.pathname} authed=${authed} scope=${url.searchParams.get('scope')}\n`);
  if (url.pathname !== '/token') { res.writeHead(404); res.end(); return; }
  if (auth && !authed) { res.writeHead(401); res.end('{"details":"bad credentials"}'); return; }
  const access = [];
  for (const scope of url.searchParams.getAll('scope')) {
    const [type, name, actions] = scope.split(':');
    if (type !== 'repository') continue;
    const want = actions.split(',');
    const granted = authed ? want : (name.startsWith('public/') ? want.filter((a) => a === 'pull') : []);
    access.push({ type, name, actions: granted });
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ token: token(url.searchParams.get('service'), access, authed ? userpass.split(':')[0] : '') }));
}).listen(Number(port), '127.0.0.1', () => console.error(`token server on ${port}`));
