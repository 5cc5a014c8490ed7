// tests/cri/cri.mjs — a small CRI client: the calls kubelet makes, over containerd's gRPC
// socket, with tests/cri/cri.proto; and Exec's streaming side, the Kubernetes remote-command
// protocol over WebSocket (subprotocol v4.channel.k8s.io: every message starts with its channel
// byte, 0 stdin, 1 stdout, 2 stderr, 3 the final status as JSON, 4 terminal resize).
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// The packages live in tests/cri/.work/node_modules (tests/cri/deps.sh), or NODE_PATH.
const require = createRequire(process.env.CM_CRI_NODE_MODULES
  ? path.join(process.env.CM_CRI_NODE_MODULES, 'x.js') : path.join(here, '.work', 'node_modules', 'x.js'));
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const WebSocket = require('ws');

const RUNTIME_METHODS = [
  'Version', 'RunPodSandbox', 'StopPodSandbox', 'RemovePodSandbox', 'PodSandboxStatus', 'ListPodSandbox',
  'CreateContainer', 'StartContainer', 'StopContainer', 'RemoveContainer', 'ListContainers',
  'ContainerStatus', 'UpdateContainerResources', 'ExecSync', 'Exec', 'ListContainerStats', 'Status',
];

export class CriError extends Error {
  constructor(method, err) {
    super(`${method}: ${err.details || err.message}`);
    this.method = method;
    this.code = err.code;
    this.details = err.details || err.message;
  }
}

// connect(socketPath) → an object with one async method per RPC (camel-cased request fields,
// as in cri.proto with keepCase: snake_case), and close().
export function connect(socket, { deadlineSeconds = 120 } = {}) {
  const def = protoLoader.loadSync(path.join(here, 'cri.proto'), {
    keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true,
  });
  const proto = grpc.loadPackageDefinition(def).runtime.v1;
  const target = `unix://${socket}`;
  const rt = new proto.RuntimeService(target, grpc.credentials.createInsecure());
  const img = new proto.ImageService(target, grpc.credentials.createInsecure());
  const call = (svc, method) => (req = {}) => new Promise((resolve, reject) => {
    const deadline = new Date(Date.now() + deadlineSeconds * 1000);
    svc[method](req, { deadline }, (err, res) => (err ? reject(new CriError(method, err)) : resolve(res)));
  });
  const client = { close: () => { rt.close(); img.close(); } };
  for (const m of RUNTIME_METHODS) client[m] = call(rt, m);
  client.ListImages = call(img, 'ListImages');
  return client;
}

// execStream(url, { stdin, tty }) → { stdout, stderr, exitCode, status }: runs the session an
// Exec response points at. `stdin` (a string) is sent once the connection is open.
export function execStream(url, { stdin = null, tty = false, timeoutMs = 60000 } = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), ['v4.channel.k8s.io']);
    const out = { stdout: [], stderr: [] };
    let status = null;
    const timer = setTimeout(() => { ws.terminate(); reject(new Error(`exec stream ${url}: no end after ${timeoutMs} ms`)); }, timeoutMs);
    ws.on('open', () => {
      if (ws.protocol !== 'v4.channel.k8s.io') {
        ws.terminate();
        reject(new Error(`exec stream: server chose subprotocol "${ws.protocol}"`));
        return;
      }
      if (tty) ws.send(Buffer.concat([Buffer.from([4]), Buffer.from(JSON.stringify({ Width: 100, Height: 30 }))]));
      if (stdin !== null) ws.send(Buffer.concat([Buffer.from([0]), Buffer.from(stdin)]));
    });
    ws.on('message', (data) => {
      const buf = Buffer.isBuffer(data) ? data : Buffer.from(data);
      if (buf.length === 0) return;
      const body = buf.subarray(1);
      if (buf[0] === 1) out.stdout.push(body);
      else if (buf[0] === 2) out.stderr.push(body);
      else if (buf[0] === 3 && body.length) status = JSON.parse(body.toString());
    });
    ws.on('error', (err) => { clearTimeout(timer); reject(err); });
    ws.on('close', () => {
      clearTimeout(timer);
      let exitCode = null;
      if (status && status.status === 'Success') exitCode = 0;
      else if (status && status.details && Array.isArray(status.details.causes)) {
        const c = status.details.causes.find((x) => x.reason === 'ExitCode');
        if (c) exitCode = Number(c.message);
      }
      resolve({
        stdout: Buffer.concat(out.stdout).toString(),
        stderr: Buffer.concat(out.stderr).toString(),
        exitCode,
        status,
      });
    });
  });
}
