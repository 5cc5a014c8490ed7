// tests/cri/lib.mjs — what the CRI cases share: pods and containers the way kubelet asks for
// them, the host's view of their processes (namespaces, cgroups), and a TAP runner that runs a
// case against several handlers and compares what each one saw.
import fs from 'node:fs';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { connect } from './cri.mjs';

export const env = {
  sock: process.env.CRI_SOCK,
  work: process.env.CRI_WORK,
  tag: process.env.CM_RUN_TAG || 'local',
  systemd: process.env.CM_CRI_SYSTEMD === 'true',
};
export const BUSYBOX = 'cm.local/busybox:1';
export const cri = connect(env.sock);
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- pods and containers -----------------------------------------------------------------------

const unified = fs.existsSync('/sys/fs/cgroup/cgroup.controllers');
let podSeq = 0;
// CM_CRI_NETWORK=NODE: pods on the node's network unless a case asks otherwise (the VM's kernel
// has no bridge or veth loaded, so no pod network there).
const defaultNetwork = process.env.CM_CRI_NETWORK || 'POD';
const livePods = new Map(); // pod id → its cgroup parent

// The cgroup parent kubelet would give the pod: a directory of its own under cgroupfs, a slice
// under systemd (containerd turns "X.slice" into the runc-style "X.slice:cri-containerd:ID").
export function cgroupParentFor(n) {
  return env.systemd ? `cmtest${env.tag}-pod${n}.slice` : `/cm-test-${env.tag}-cri/pod${n}`;
}

// podConfig(handler, opts) → a PodSandboxConfig as kubelet builds it.
export function podConfig(opts = {}) {
  const n = ++podSeq;
  const name = opts.name || `pod${n}`;
  return {
    metadata: { name, uid: `uid-${env.tag}-${n}`, namespace: 'cm-cri', attempt: 0 },
    // kubelet leaves the hostname to the node for a pod on the node's network.
    hostname: (opts.network || defaultNetwork) === 'NODE' ? '' : opts.hostname ?? name,
    log_directory: path.join(env.work, 'logs', `${name}-${n}`),
    labels: { 'cm.test': 'cri' },
    annotations: opts.annotations || {},
    linux: {
      cgroup_parent: opts.cgroupParent ?? cgroupParentFor(n),
      security_context: {
        namespace_options: { network: opts.network || defaultNetwork, pid: opts.pid || 'CONTAINER', ipc: opts.ipc || 'POD' },
        privileged: !!opts.privileged,
      },
    },
  };
}

export async function runPod(handler, opts = {}) {
  const config = podConfig(opts);
  fs.mkdirSync(config.log_directory, { recursive: true });
  const { pod_sandbox_id: id } = await cri.RunPodSandbox({ config, runtime_handler: handler });
  livePods.set(id, config.linux.cgroup_parent);
  return { id, config, handler };
}

// StopPodSandbox as kubelet calls it: again when it fails. containerd 1.6 now and then answers
// "failed to kill container …: ttrpc: closed" while the shim of a container that has just
// exited shuts down (seen with runc and codemode as the handler alike, about one pod in 30 of
// tests/cri/bench.mjs); kubelet retries, and the second call finds the container stopped.
async function stopPod(id) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await cri.StopPodSandbox({ pod_sandbox_id: id });
    } catch (e) {
      if (attempt >= 3 || !/ttrpc: closed/.test(e.message)) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

export async function removePod(pod) {
  await stopPod(pod.id);
  await cri.RemovePodSandbox({ pod_sandbox_id: pod.id });
  livePods.delete(pod.id);
  return removePodCgroup(pod.config.linux.cgroup_parent);
}

// The pod-level cgroup is kubelet's (the runtimes make the missing directories of a parent,
// and leave them): removed once the pod is gone, as kubelet does. What cannot be removed holds
// something the runtime left behind. Returns those directories.
export function removePodCgroup(parent) {
  if (!parent || env.systemd) return [];
  const busy = [];
  for (const ctl of unified ? [''] : fs.readdirSync('/sys/fs/cgroup')) {
    const d = path.join('/sys/fs/cgroup', ctl, parent);
    try {
      fs.rmdirSync(d);
    } catch (e) {
      if (e.code !== 'ENOENT' && e.code !== 'ENOTDIR') busy.push(`${d}: ${e.code} (${fs.existsSync(d) ? fs.readdirSync(d).filter((x) => !x.includes('.')).join(' ') : ''})`);
    }
  }
  return busy;
}

// Every pod a case left (a failed assertion) goes at the end of the case.
export async function removeLivePods() {
  for (const [id, parent] of [...livePods]) {
    try {
      await stopPod(id);
      await cri.RemovePodSandbox({ pod_sandbox_id: id });
    } catch (e) {
      if (e.code !== 5) console.log(`# cleanup of pod ${id}: ${e.message}`); // 5: NOT_FOUND, the case removed it
    }
    for (const b of removePodCgroup(parent)) console.log(`# cgroup left by pod ${id}: ${b}`);
    livePods.delete(id);
  }
}

export async function createContainer(pod, opts = {}) {
  const name = opts.name || 'c';
  const podNs = pod.config.linux.security_context.namespace_options;
  const config = {
    metadata: { name, attempt: 0 },
    image: { image: opts.image || BUSYBOX },
    command: opts.command || ['sh', '-c', 'sleep 1000'],
    args: opts.args || [],
    envs: Object.entries(opts.env || {}).map(([key, value]) => ({ key, value })),
    labels: {},
    annotations: opts.annotations || {},
    log_path: `${name}.log`,
    stdin: !!opts.stdin,
    tty: !!opts.tty,
    linux: {
      resources: opts.resources || {},
      // As kubelet does: the pod's network and ipc, a pid namespace of the container's own
      // unless the pod shares one (POD is the proto default, so kubelet always says which).
      security_context: {
        namespace_options: { network: podNs.network, pid: podNs.pid === 'POD' ? 'POD' : podNs.pid === 'NODE' ? 'NODE' : 'CONTAINER', ipc: podNs.ipc },
        ...(opts.security || {}),
      },
    },
  };
  const { container_id: id } = await cri.CreateContainer({ pod_sandbox_id: pod.id, config, sandbox_config: pod.config });
  return { id, pod, name, logPath: path.join(pod.config.log_directory, config.log_path) };
}

export async function runContainer(pod, opts = {}) {
  const c = await createContainer(pod, opts);
  await cri.StartContainer({ container_id: c.id });
  return c;
}

export async function containerStatus(c) {
  const r = await cri.ContainerStatus({ container_id: c.id, verbose: true });
  const info = r.info && r.info.info ? JSON.parse(r.info.info) : {};
  return { ...r.status, pid: info.pid, runtimeSpec: info.runtimeSpec };
}

export async function podPid(pod) {
  const r = await cri.PodSandboxStatus({ pod_sandbox_id: pod.id, verbose: true });
  return JSON.parse(r.info.info).pid;
}

export async function containerPid(c) {
  return (await containerStatus(c)).pid;
}

// waitExited(c) → the status once the container has exited (containerd learns it from the shim).
export async function waitExited(c, timeoutMs = 30000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const st = await containerStatus(c);
    if (st.state === 'CONTAINER_EXITED') return st;
    if (Date.now() > end) throw new Error(`container ${c.name} did not exit in ${timeoutMs} ms (state ${st.state})`);
    await sleep(50);
  }
}

export async function execSync(c, cmd, timeout = 20) {
  const r = await cri.ExecSync({ container_id: c.id, cmd, timeout });
  return { stdout: r.stdout.toString(), stderr: r.stderr.toString(), exitCode: r.exit_code };
}

// The CRI log file without its timestamps: "stream tag text" per line.
export function readLog(c) {
  let text;
  try {
    text = fs.readFileSync(c.logPath, 'utf8');
  } catch (e) {
    return [`(no log: ${e.code})`];
  }
  return text.split('\n').filter(Boolean).map((l) => l.replace(/^\S+ /, ''));
}

// --- the host's view -------------------------------------------------------------------------

export function nsOf(pid, type) {
  return fs.readlinkSync(`/proc/${pid}/ns/${type}`);
}
export const ourNs = (type) => fs.readlinkSync(`/proc/self/ns/${type}`);


// The cgroup directory of `pid` for a v1 controller (or the v2 one).
export function cgroupDir(pid, controller) {
  const lines = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n').filter(Boolean);
  for (const l of lines) {
    const [, ctrls, p] = l.match(/^\d+:([^:]*):(.*)$/);
    if (unified && ctrls === '') return path.join('/sys/fs/cgroup', p);
    if (!unified && ctrls.split(',').includes(controller)) return path.join('/sys/fs/cgroup', controller, p);
  }
  throw new Error(`pid ${pid}: no ${controller} cgroup in /proc/${pid}/cgroup`);
}

export function cgroupPath(pid, controller) {
  const d = cgroupDir(pid, controller);
  return unified ? d.slice('/sys/fs/cgroup'.length) : d.slice(`/sys/fs/cgroup/${controller}`.length);
}

const readTrim = (f) => fs.readFileSync(f, 'utf8').trim();

// The limits of pid's cgroup, in one shape for v1 and v2.
export function cgroupLimits(pid) {
  if (unified) {
    const d = cgroupDir(pid, '');
    const [quota, period] = readTrim(path.join(d, 'cpu.max')).split(' ');
    return {
      memory: readTrim(path.join(d, 'memory.max')),
      cpuQuota: quota,
      cpuPeriod: period,
      cpuWeight: readTrim(path.join(d, 'cpu.weight')),
      pids: readTrim(path.join(d, 'pids.max')),
    };
  }
  const mem = cgroupDir(pid, 'memory');
  const cpu = cgroupDir(pid, 'cpu');
  const pids = cgroupDir(pid, 'pids');
  return {
    memory: readTrim(path.join(mem, 'memory.limit_in_bytes')),
    cpuQuota: readTrim(path.join(cpu, 'cpu.cfs_quota_us')),
    cpuPeriod: readTrim(path.join(cpu, 'cpu.cfs_period_us')),
    cpuShares: readTrim(path.join(cpu, 'cpu.shares')),
    pids: readTrim(path.join(pids, 'pids.max')),
  };
}

export const isUnified = unified;

export function statusLine(pid, field) {
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${field}:\\s*(.*)$`, 'm'));
  return m ? m[1] : null;
}

// --- TAP -------------------------------------------------------------------------------------

let testNo = 0;
let failures = 0;

export function tapOk(desc) {
  console.log(`ok ${++testNo} - ${desc}`);
}
export function tapNotOk(desc, lines) {
  failures++;
  console.log(`not ok ${++testNo} - ${desc}`);
  for (const l of lines) for (const part of String(l).split('\n')) console.log(`# ${part}`);
}
export function tapSkip(desc, why) {
  console.log(`ok ${++testNo} - ${desc} # skip ${why}`);
}
// The plan is run.sh's: it adds its own checks after containerd has stopped.
export function tapEnd() {
  console.log(`# ${testNo} cases, ${failures} failed`);
  return failures;
}

const show = (v) => JSON.stringify(v, null, 1);

// compare(desc, handlers, fn, expect): fn(handler) → an observation (plain data), for each
// handler in turn; ok when every handler saw the same thing and expect(observation) lists no
// problem. The first handler is the reference (runc).
export async function compare(desc, handlers, fn, expect = () => []) {
  const seen = [];
  for (const h of handlers) {
    try {
      seen.push([h, await fn(h)]);
    } catch (e) {
      seen.push([h, { error: e.message }]);
    } finally {
      await removeLivePods();
    }
  }
  const problems = [];
  const [refName, ref] = seen[0];
  for (const [h, obs] of seen.slice(1)) {
    if (!isDeepStrictEqual(obs, ref)) problems.push(`${h} saw something else than ${refName}:`, `--- ${refName}`, show(ref), `--- ${h}`, show(obs));
  }
  for (const [h, obs] of seen) {
    if (obs && obs.error) {
      problems.push(`${h}: ${obs.error}`);
      continue;
    }
    try {
      for (const p of expect(obs)) problems.push(`${h}: ${p}`);
    } catch (e) {
      problems.push(`${h}: ${e.message} (observed: ${JSON.stringify(obs)})`);
    }
  }
  if (problems.length === 0) tapOk(`${desc} (${handlers.join(' = ')})`);
  else {
    if (!problems.some((p) => p.includes('saw something else'))) problems.push(`observed: ${show(ref)}`);
    tapNotOk(`${desc} (${handlers.join(' vs ')})`, problems);
  }
}

// check(desc, fn): fn() → a list of problems (empty: ok), for cases of one handler.
export async function check(desc, fn) {
  let problems;
  try {
    problems = await fn();
  } catch (e) {
    problems = [e.stack || e.message];
  } finally {
    await removeLivePods();
  }
  if (problems.length === 0) tapOk(desc);
  else tapNotOk(desc, problems);
}

// expect helpers: each returns a list of problems.
export function want(cond, msg) {
  return cond ? [] : [msg];
}
