// tests/cri/suite.mjs — the CRI end-to-end cases (tests/cri/run.sh starts containerd first).
// Each case runs with runc as the handler, then codemode, and compares what they saw: the same
// results, or the case fails. Then the codemode-mcp handler's own cases.
//   node suite.mjs [all|cgroups]   cgroups: only the cgroup cases (the VM's systemd variant)
import fs from 'node:fs';
import path from 'node:path';
import { execStream } from './cri.mjs';
import {
  cri, env, compare, check, want, runPod, removePod, removePodCgroup, createContainer, runContainer, containerStatus,
  podPid, containerPid, waitExited, execSync, readLog, nsOf, ourNs, cgroupDir, cgroupPath, cgroupLimits,
  isUnified, statusLine, sleep, tapEnd,
} from './lib.mjs';

const H = ['runc', 'codemode'];
const only = process.argv[2] || 'all';
const MiB = 1024 * 1024;
const shimRoot = '/run/containerd/runc/k8s.io';
const cmdline = (pid) => fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
// The program once it runs: a start returns when the runtime has let the process go, which may
// still be the runtime's own code for a moment (runc's "runc init" reads its fifo, then execs).
async function programOf(pid, want, timeoutMs = 5000) {
  const end = Date.now() + timeoutMs;
  let c = cmdline(pid);
  while (c !== want && Date.now() < end) {
    await sleep(20);
    c = cmdline(pid);
  }
  return c;
}
const alive = (pid) => fs.existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
const errText = async (p) => {
  try {
    await p;
    return null;
  } catch (e) {
    return e.details || e.message;
  }
};

// --- the pod sandbox -------------------------------------------------------------------------

async function podCases() {
  await compare('pod sandbox: RunPodSandbox, status, list, StopPodSandbox, RemovePodSandbox', H, async (h) => {
    const pod = await runPod(h);
    const st = (await cri.PodSandboxStatus({ pod_sandbox_id: pod.id })).status;
    const pid = await podPid(pod);
    const listed = (await cri.ListPodSandbox({})).items.find((p) => p.id === pod.id);
    const obs = {
      state: st.state,
      ipOnPodNetwork: /^10\.213\.0\.\d+$/.test(st.network.ip),
      handler: st.runtime_handler === h,
      listed: !!listed && listed.state,
      pause: await programOf(pid, '/pause'),
      netnsIsNodes: nsOf(pid, 'net') === ourNs('net'),
      runtimeState: fs.existsSync(path.join(shimRoot, pod.id)),
    };
    await cri.StopPodSandbox({ pod_sandbox_id: pod.id });
    obs.afterStop = (await cri.PodSandboxStatus({ pod_sandbox_id: pod.id })).status.state;
    obs.pauseAfterStop = alive(pid);
    await cri.RemovePodSandbox({ pod_sandbox_id: pod.id });
    obs.listedAfterRemove = (await cri.ListPodSandbox({})).items.some((p) => p.id === pod.id);
    obs.runtimeStateAfterRemove = fs.existsSync(path.join(shimRoot, pod.id));
    return obs;
  }, (o) => [
    ...want(o.state === 'SANDBOX_READY' && o.afterStop === 'SANDBOX_NOTREADY', `states ${o.state} → ${o.afterStop}`),
    ...want(o.ipOnPodNetwork && !o.netnsIsNodes, 'the pod has an address on the pod network, in a namespace of its own'),
    ...want(o.pause === '/pause' && o.pauseAfterStop === false, 'the pause process runs, and stops with the pod'),
    ...want(o.runtimeState && !o.runtimeStateAfterRemove && !o.listedAfterRemove, 'the runtime state goes with the pod'),
  ]);

  await compare('a container shares the pod\'s network, ipc and uts namespaces and has its own pid namespace', H, async (h) => {
    const pod = await runPod(h, { hostname: 'cm-cri-host' });
    const c = await runContainer(pod, { command: ['sleep', '1000'] });
    const [pp, cp] = [await podPid(pod), await containerPid(c)];
    const same = (t) => nsOf(pp, t) === nsOf(cp, t);
    const inside = await execSync(c, ['sh', '-c', 'hostname; cat /proc/1/cmdline | tr "\\0" " "; echo; ip -o link | cut -d: -f2 | cut -d@ -f1']);
    return { net: same('net'), ipc: same('ipc'), uts: same('uts'), pid: same('pid'), mnt: same('mnt'), inside };
  }, (o) => want(o.net && o.ipc && o.uts && !o.pid && !o.mnt && o.inside.stdout.startsWith('cm-cri-host\nsleep 1000'), 'net/ipc/uts shared, pid/mnt own, the pod\'s hostname'));

  await compare('shareProcessNamespace: containers join the pause container\'s pid namespace (sealed re-exec path)', H, async (h) => {
    const pod = await runPod(h, { pid: 'POD' });
    const pidPod = { namespace_options: { network: 'POD', pid: 'POD', ipc: 'POD' } };
    const c1 = await runContainer(pod, { name: 'c1', command: ['sleep', '1001'], security: pidPod });
    const c2 = await runContainer(pod, { name: 'c2', command: ['sleep', '1002'], security: pidPod });
    const pp = await podPid(pod);
    const ps = await execSync(c2, ['sh', '-c', 'for p in /proc/[0-9]*; do tr "\\0" " " <$p/cmdline; echo; done | grep -v "^$" | sort']);
    return {
      c1SharesPause: nsOf(pp, 'pid') === nsOf(await containerPid(c1), 'pid'),
      c2SharesPause: nsOf(pp, 'pid') === nsOf(await containerPid(c2), 'pid'),
      pid1: (await execSync(c1, ['cat', '/proc/1/cmdline'])).stdout.replace(/\0/g, ' ').trim(),
      processes: ps.stdout.split('\n').filter((l) => l && !l.startsWith('sh ') && !l.startsWith('sort') && !l.startsWith('grep') && !l.startsWith('tr ')),
    };
  }, (o) => want(o.c1SharesPause && o.c2SharesPause && o.pid1 === '/pause' && o.processes.join('|') === '/pause |sleep 1001 |sleep 1002 ', `pid 1 is /pause and each sees the other: ${JSON.stringify(o)}`));

  // The shim keeps the runtime's log of each container (its --log) in the task's bundle dir.
  const runtimeLog = (id) => {
    try {
      return fs.readFileSync(`/run/containerd/io.containerd.runtime.v2.task/k8s.io/${id}/log.json`, 'utf8');
    } catch {
      return '';
    }
  };
  await check('codemode: a container that joins the pod\'s pid namespace is created from the sealed copy of the runtime; one with its own is not', async () => {
    const pod = await runPod('codemode', { pid: 'POD' });
    const shared = await runContainer(pod, { name: 'shared', command: ['sleep', '1000'], security: { namespace_options: { network: 'POD', pid: 'POD', ipc: 'POD' } } });
    const own = await runContainer(pod, { name: 'own', command: ['sleep', '1000'], security: { namespace_options: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } });
    const sealed = (id) => runtimeLog(id).includes('running from the sealed copy of the runtime');
    return [
      ...want(sealed(shared.id), `the shared-pid container's runtime log: ${runtimeLog(shared.id) || '(empty)'}`),
      ...want(!sealed(own.id), `the own-pid container's runtime log: ${runtimeLog(own.id)}`),
    ];
  });

  await compare('hostNetwork, hostPID, hostIPC: the pod uses the node\'s namespaces', H, async (h) => {
    const pod = await runPod(h, { network: 'NODE', pid: 'NODE', ipc: 'NODE' });
    const node = { namespace_options: { network: 'NODE', pid: 'NODE', ipc: 'NODE' } };
    const c = await runContainer(pod, { command: ['sleep', '1000'], security: node });
    const cp = await containerPid(c);
    const st = (await cri.PodSandboxStatus({ pod_sandbox_id: pod.id })).status;
    return {
      ip: st.network.ip,
      net: nsOf(cp, 'net') === ourNs('net'),
      pid: nsOf(cp, 'pid') === ourNs('pid'),
      ipc: nsOf(cp, 'ipc') === ourNs('ipc'),
      uts: nsOf(cp, 'uts') === ourNs('uts'),
    };
  }, (o) => want(o.net && o.pid && o.ipc && o.uts, 'every namespace is the node\'s'));

  await compare('a privileged pod and container: every capability and the host\'s devices', H, async (h) => {
    const pod = await runPod(h, { privileged: true });
    const c = await runContainer(pod, { command: ['sleep', '1000'], security: { privileged: true } });
    const cp = await containerPid(c);
    const devs = await execSync(c, ['sh', '-c', 'ls /dev | wc -l']);
    const hostDevs = fs.readdirSync('/dev').length;
    return { capEffIsNodes: statusLine(cp, 'CapEff') === statusLine(process.pid, 'CapBnd'), seccomp: statusLine(cp, 'Seccomp'), devsLikeHost: Math.abs(Number(devs.stdout) - hostDevs) < 8 };
  }, (o) => want(o.capEffIsNodes && o.devsLikeHost, 'all capabilities (the node\'s bounding set), the host\'s /dev'));
}

// --- exec, logs, status, stop, remove --------------------------------------------------------

async function processCases() {
  await compare('ExecSync: stdout, stderr, exit code, environment, a missing command, a timeout', H, async (h) => {
    const pod = await runPod(h);
    const c = await runContainer(pod, { command: ['sleep', '1000'], env: { FOO: 'from-config' } });
    const plain = await execSync(c, ['sh', '-c', 'echo out; echo err >&2; echo $FOO; id -u; pwd; exit 3']);
    const missing = await errText(cri.ExecSync({ container_id: c.id, cmd: ['no-such-command'], timeout: 10 }));
    const timeout = await errText(cri.ExecSync({ container_id: c.id, cmd: ['sleep', '30'], timeout: 1 }));
    const after = await execSync(c, ['true']);
    return {
      plain,
      missing: missing && /executable file not found/.test(missing),
      timeout: timeout && /timeout 1s exceeded/.test(timeout),
      stillRuns: after.exitCode === 0,
    };
  }, (o) => want(o.plain.stdout === 'out\nfrom-config\n0\n/\n' && o.plain.stderr === 'err\n' && o.plain.exitCode === 3 && o.missing && o.timeout && o.stillRuns, 'output, status, errors'));

  await compare('Exec streaming (remote-command over WebSocket): stdin, stdout, stderr, exit code; with a tty', H, async (h) => {
    const pod = await runPod(h);
    const c = await runContainer(pod, { command: ['sleep', '1000'] });
    const e1 = await cri.Exec({ container_id: c.id, cmd: ['sh', '-c', 'read l; echo got:$l; echo e2 >&2; exit 4'], stdin: true, stdout: true, stderr: true });
    const plain = await execStream(e1.url, { stdin: 'hello\n' });
    // The size comes with the client's first resize message, which containerd applies to the
    // pty once the process runs (as with kubectl exec -t; busybox stty prints nothing for a 0x0
    // terminal): wait for it.
    const e2 = await cri.Exec({
      container_id: c.id,
      cmd: ['sh', '-c', 'tty; for i in $(seq 50); do s=$(stty size 2>/dev/null) && [ -n "$s" ] && break; sleep 0.1; done; echo $s; exit 5'],
      tty: true, stdin: true, stdout: true,
    });
    const tty = await execStream(e2.url, { tty: true, stdin: '' });
    return {
      plain: { stdout: plain.stdout, stderr: plain.stderr, exitCode: plain.exitCode },
      tty: { stdout: tty.stdout.replace(/\r/g, ''), exitCode: tty.exitCode },
    };
  }, (o) => want(o.plain.stdout === 'got:hello\n' && o.plain.exitCode === 4 && o.tty.stdout.startsWith('/dev/pts/') && o.tty.exitCode === 5, 'streams and statuses'));

  await compare('container logs: stdout and stderr in the CRI log file, full and partial lines', H, async (h) => {
    const pod = await runPod(h);
    const c = await runContainer(pod, { command: ['sh', '-c', 'echo one; echo two >&2; echo three; printf partial'] });
    await waitExited(c);
    // Two pipes: stdout's and stderr's lines may interleave either way.
    return readLog(c).sort();
  }, (o) => want(JSON.stringify(o) === JSON.stringify(['stderr F two', 'stdout F one', 'stdout F three', 'stdout P partial']), `log lines ${JSON.stringify(o)}`));

  await compare('container status and exit codes: 0, 7, killed by SIGKILL, OOM-killed, a command that does not exist', H, async (h) => {
    const pod = await runPod(h);
    const out = {};
    for (const [name, command, resources, signal] of [
      ['zero', ['true']],
      ['seven', ['sh', '-c', 'exit 7']],
      ['killed', ['sleep', '1000'], undefined, 'SIGKILL'],
      // After a second: the shim watches the cgroup for OOM events only once the task runs, and
      // an OOM kill before that is reported as a plain Error (seen with runc as with codemode).
      ['oom', ['sh', '-c', 'sleep 1; x=a; while :; do x=$x$x; done'], { memory_limit_in_bytes: 32 * MiB, memory_swap_limit_in_bytes: 32 * MiB }],
    ]) {
      const c = await runContainer(pod, { name, command, resources });
      if (signal) process.kill(await containerPid(c), signal); // from the node, as the OOM killer does
      const st = await waitExited(c);
      // Both times set. Not their order: containerd stamps started_at when the runtime's start
      // has returned, and a `true` may be gone by then (finished_at, from the shim, is earlier).
      out[name] = { state: st.state, exitCode: st.exit_code, reason: st.reason, ran: st.started_at > 0 && st.finished_at > 0 };
    }
    const c = await createContainer(pod, { name: 'missing', command: ['no-such-command'] });
    const err = await errText(cri.StartContainer({ container_id: c.id }));
    const st = await containerStatus(c);
    out.missing = {
      startFails: !!err && /executable file not found/.test(err),
      state: st.state, exitCode: st.exit_code, reason: st.reason, message: /executable file not found/.test(st.message),
    };
    return out;
  }, (o) => [
    ...want(o.zero && o.zero.exitCode === 0 && o.zero.reason === 'Completed', `true: ${JSON.stringify(o.zero)}`),
    ...want(o.seven && o.seven.exitCode === 7 && o.seven.reason === 'Error', `exit 7: ${JSON.stringify(o.seven)}`),
    ...want(o.killed && o.killed.exitCode === 137, `SIGKILL: ${JSON.stringify(o.killed)}`),
    ...want(o.oom && o.oom.exitCode === 137 && o.oom.reason === 'OOMKilled', `OOM: ${JSON.stringify(o.oom)}`),
    ...want(o.missing && o.missing.startFails && o.missing.reason === 'StartError', `missing command: ${JSON.stringify(o.missing)}`),
  ]);

  await compare('StopContainer: SIGTERM first, SIGKILL when the grace period ends', H, async (h) => {
    const pod = await runPod(h);
    const polite = await runContainer(pod, { name: 'polite', command: ['sh', '-c', 'trap "echo got-term; exit 0" TERM; echo ready; while :; do sleep 0.1; done'] });
    const stubborn = await runContainer(pod, { name: 'stubborn', command: ['sh', '-c', 'trap "echo ignored-term" TERM; echo ready; while :; do sleep 0.1; done'] });
    await sleep(300);
    await cri.StopContainer({ container_id: polite.id, timeout: 10 });
    const t0 = Date.now();
    await cri.StopContainer({ container_id: stubborn.id, timeout: 1 });
    const waited = Date.now() - t0;
    const [p, s] = [await containerStatus(polite), await containerStatus(stubborn)];
    return {
      polite: { state: p.state, exitCode: p.exit_code, log: readLog(polite) },
      stubborn: { state: s.state, exitCode: s.exit_code, log: readLog(stubborn), waitedForGrace: waited >= 900 },
    };
  }, (o) => want(o.polite.exitCode === 0 && o.polite.log.includes('stdout F got-term') && o.stubborn.exitCode === 137 &&
    o.stubborn.log.includes('stdout F ignored-term') && o.stubborn.waitedForGrace, 'TERM handled → 0; TERM ignored → KILL after the grace → 137'));

  await compare('RemoveContainer: an exited and a running container; the runtime keeps nothing', H, async (h) => {
    const pod = await runPod(h);
    const done = await runContainer(pod, { name: 'done', command: ['true'] });
    const running = await runContainer(pod, { name: 'running', command: ['sleep', '1000'] });
    await waitExited(done);
    const rpid = await containerPid(running);
    const before = [fs.existsSync(path.join(shimRoot, done.id)), fs.existsSync(path.join(shimRoot, running.id))];
    await cri.RemoveContainer({ container_id: done.id });
    const runningErr = await errText(cri.RemoveContainer({ container_id: running.id }));
    const left = (await cri.ListContainers({ filter: { pod_sandbox_id: pod.id } })).containers.map((x) => x.metadata.name);
    return {
      before,
      runningErr,
      left,
      processGone: !alive(rpid),
      after: [fs.existsSync(path.join(shimRoot, done.id)), fs.existsSync(path.join(shimRoot, running.id))],
    };
  }, (o) => want(o.left.length === 0 && o.processGone && !o.after[0] && !o.after[1], 'both gone, with their runtime state'));
}

// --- resources and cgroups -------------------------------------------------------------------

// The cgroup path of a pod's process with its ids replaced, so that handlers compare equal.
function cgroupShape(pid, controller, ids) {
  let p = cgroupPath(pid, controller);
  for (const [id, name] of ids) p = p.split(id).join(name);
  return p.split(env.tag).join('TAG');
}

async function resourceCases() {
  await compare('UpdateContainerResources: memory and CPU limits reach the container\'s cgroup', H, async (h) => {
    const pod = await runPod(h);
    const c = await runContainer(pod, {
      command: ['sleep', '1000'],
      resources: { memory_limit_in_bytes: 128 * MiB, cpu_period: 100000, cpu_quota: 50000, cpu_shares: 256 },
    });
    const pid = await containerPid(c);
    const before = cgroupLimits(pid);
    await cri.UpdateContainerResources({ container_id: c.id, linux: { memory_limit_in_bytes: 96 * MiB, cpu_period: 100000, cpu_quota: 20000, cpu_shares: 512 } });
    const after = cgroupLimits(pid);
    return { before, after };
  }, (o) => want(o.before.memory === String(128 * MiB) && o.after.memory === String(96 * MiB) && o.after.cpuQuota === '20000', `limits ${JSON.stringify(o)}`));

  await compare(`pod- and container-level cgroups (${env.systemd ? 'systemd' : 'cgroupfs'} driver): the pod's parent holds the pause container and the containers`, H, async (h) => {
    const n = 'lvl';
    const parent = env.systemd ? `cmtest${env.tag}-${n}.slice` : `/cm-test-${env.tag}-cri/${n}`;
    // The pod-level cgroup is kubelet's: made before the pod, with the pod's limit.
    const podMemDir = isUnified ? path.join('/sys/fs/cgroup', parent) : path.join('/sys/fs/cgroup/memory', parent);
    if (!env.systemd) {
      fs.mkdirSync(podMemDir, { recursive: true });
      if (isUnified) {
        for (const d of [path.dirname(podMemDir), path.dirname(path.dirname(podMemDir))]) {
          try { fs.writeFileSync(path.join(d, 'cgroup.subtree_control'), '+memory +cpu +pids'); } catch { /* the root's is set */ }
        }
      }
      fs.writeFileSync(path.join(podMemDir, isUnified ? 'memory.max' : 'memory.limit_in_bytes'), String(256 * MiB));
    }
    const pod = await runPod(h, { cgroupParent: parent });
    const c = await runContainer(pod, { command: ['sleep', '1000'], resources: { memory_limit_in_bytes: 64 * MiB, cpu_shares: 512 } });
    const [pp, cp] = [await podPid(pod), await containerPid(c)];
    const ids = [[pod.id, 'SANDBOX'], [c.id, 'CONTAINER']];
    const obs = {
      pause: cgroupShape(pp, 'memory', ids),
      container: cgroupShape(cp, 'memory', ids),
      containerCpu: cgroupShape(cp, 'cpu', ids),
      containerLimits: cgroupLimits(cp),
      podLimit: env.systemd ? null : fs.readFileSync(path.join(podMemDir, isUnified ? 'memory.max' : 'memory.limit_in_bytes'), 'utf8').trim(),
    };
    const pauseDir = cgroupDir(pp, 'memory');
    const containerDir = cgroupDir(cp, 'memory');
    const busy = await removePod(pod);
    obs.leftAfterRemove = [fs.existsSync(pauseDir), fs.existsSync(containerDir), ...busy];
    return obs;
  }, (o) => [
    ...want(env.systemd
      ? o.pause === '/cmtestTAG.slice/cmtestTAG-lvl.slice/cri-containerd-SANDBOX.scope' && o.container === '/cmtestTAG.slice/cmtestTAG-lvl.slice/cri-containerd-CONTAINER.scope'
      : o.pause === '/cm-test-TAG-cri/lvl/SANDBOX' && o.container === '/cm-test-TAG-cri/lvl/CONTAINER',
    `cgroups of the pause container ${o.pause} and the container ${o.container}`),
    ...want(o.containerLimits && o.containerLimits.memory === String(64 * MiB), `container limit ${JSON.stringify(o.containerLimits)}`),
    ...want(env.systemd || o.podLimit === String(256 * MiB), `the pod's own limit is kept: ${o.podLimit}`),
    ...want(o.leftAfterRemove && o.leftAfterRemove.length === 2 && !o.leftAfterRemove[0] && !o.leftAfterRemove[1], 'the pause and container cgroups go with the pod'),
  ]);

  await compare('ListContainerStats: CPU and memory of each container of the pod', H, async (h) => {
    const pod = await runPod(h);
    await runContainer(pod, { name: 'busy', command: ['sh', '-c', 'i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; sleep 1000'] });
    await runContainer(pod, { name: 'idle', command: ['sleep', '1000'] });
    await sleep(1500);
    const { stats } = await cri.ListContainerStats({ filter: { pod_sandbox_id: pod.id } });
    return stats.map((s) => ({
      name: s.attributes.metadata.name,
      cpu: (s.cpu && s.cpu.usage_core_nano_seconds && s.cpu.usage_core_nano_seconds.value) > 0,
      memory: (s.memory && s.memory.working_set_bytes && s.memory.working_set_bytes.value) > 0,
    })).sort((a, b) => a.name.localeCompare(b.name));
  }, (o) => want(Array.isArray(o) && o.length === 2 && o.every((s) => s.cpu && s.memory), `stats ${JSON.stringify(o)}`));
}

// --- codemode-mcp ----------------------------------------------------------------------------

// What the host sees of a hardened process, and what it sees from inside.
async function hardening(c) {
  const pid = await containerPid(c);
  const inside = await execSync(c, ['sh', '-c', 'touch /rootfs-write 2>&1; touch /tmp/ok && echo tmp-writable; ip -o link | cut -d: -f2 | cut -d@ -f1 | tr -d " "; grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status']);
  return {
    capEff: statusLine(pid, 'CapEff'),
    capBnd: statusLine(pid, 'CapBnd'),
    noNewPrivs: statusLine(pid, 'NoNewPrivs'),
    seccomp: statusLine(pid, 'Seccomp'),
    limits: cgroupLimits(pid),
    inside: inside.stdout,
  };
}

async function mcpCases() {
  await check('codemode-mcp: every container of the pod gets the mcp profile (no capabilities, no_new_privs, seccomp, read-only root, lo only, limits), and so does an exec', async () => {
    const pod = await runPod('codemode-mcp');
    const c = await runContainer(pod, { command: ['sleep', '1000'] });
    const o = await hardening(c);
    const pp = await podPid(pod);
    const p = [];
    p.push(...want(o.capEff === '0000000000000000' && o.capBnd === '0000000000000000', `capabilities ${o.capEff}/${o.capBnd}`));
    p.push(...want(o.noNewPrivs === '1' && o.seccomp === '2', `NoNewPrivs ${o.noNewPrivs}, Seccomp ${o.seccomp}`));
    p.push(...want(/Read-only file system/.test(o.inside) && /tmp-writable/.test(o.inside), `read-only root with a /tmp: ${o.inside}`));
    const links = o.inside.split('\n').filter((l) => /^[a-z0-9]+$/.test(l) && l !== 'tmp');
    p.push(...want(links.join(',') === 'lo', `network interfaces ${links.join(',')} (want lo only)`));
    p.push(...want(/CapEff:\s+0+\n/.test(o.inside) && /NoNewPrivs:\s+1/.test(o.inside), `the exec'd process: ${o.inside}`));
    p.push(...want(o.limits.memory === String(512 * MiB) && o.limits.pids === '256', `limits ${JSON.stringify(o.limits)}`));
    p.push(...want((o.limits.cpuQuota === '100000' && o.limits.cpuPeriod === '100000'), `cpu ${o.limits.cpuQuota}/${o.limits.cpuPeriod}`));
    p.push(...want(statusLine(pp, 'CapEff') === '0000000000000000', `the pause container: CapEff ${statusLine(pp, 'CapEff')}`));
    // One user namespace per pod, not the node's: the container joins the one that owns the
    // pod's IPC and network namespaces (its own could not mount mqueue there), and its root is
    // a range uid on the node.
    const cp = await containerPid(c);
    p.push(...want(nsOf(cp, 'user') === nsOf(pp, 'user') && nsOf(pp, 'user') !== ourNs('user'),
      `user namespaces: container ${nsOf(cp, 'user')}, pause ${nsOf(pp, 'user')}, node ${ourNs('user')}`));
    const hostUid = Number(statusLine(cp, 'Uid').split(/\s+/)[0]);
    p.push(...want(hostUid >= 65536, `the container's root is node uid ${hostUid} (want a range uid)`));
    return p;
  });

  await check('run.codemode.* pod annotations reach the runtime (pod_annotations): run.codemode.profile=mcp hardens a codemode pod, run.codemode.landlock.deny denies a path, nothing loosens codemode-mcp', async () => {
    const p = [];
    const plain = await runPod('codemode');
    const pc = await runContainer(plain, { command: ['sleep', '1000'] });
    const po = await hardening(pc);
    p.push(...want(po.capEff !== '0000000000000000' && po.noNewPrivs === '0', `without the annotation: CapEff ${po.capEff} NoNewPrivs ${po.noNewPrivs}`));

    const annotations = { 'run.codemode.profile': 'mcp', 'run.codemode.cm-test': 'passed-through', 'example.com/other': 'kept-out' };
    const pod = await runPod('codemode', { annotations });
    const c = await runContainer(pod, { command: ['sleep', '1000'] });
    const o = await hardening(c);
    p.push(...want(o.capEff === '0000000000000000' && o.noNewPrivs === '1' && /Read-only file system/.test(o.inside), `with run.codemode.profile=mcp: ${JSON.stringify(o)}`));
    const spec = (await containerStatus(c)).runtimeSpec || {};
    const a = spec.annotations || {};
    p.push(...want(a['run.codemode.cm-test'] === 'passed-through' && !('example.com/other' in a), `annotations in the container's config: ${JSON.stringify(a)}`));

    // Landlock's annotation through the same pass-through: a denied path is unreadable, under
    // the plain handler too (man codemode-profiles, "Denied paths").
    const ll = await runPod('codemode', { annotations: { 'run.codemode.landlock.deny': '["/etc/passwd"]' } });
    const llc = await runContainer(ll, { command: ['sleep', '1000'] });
    const denied = await execSync(llc, ['sh', '-c', 'cat /etc/passwd >/dev/null 2>&1 && echo read || echo denied; cat /etc/group >/dev/null && echo group-read']);
    p.push(...want(denied.stdout === 'denied\ngroup-read\n', `run.codemode.landlock.deny ["/etc/passwd"]: ${JSON.stringify(denied)}`));

    const loose = await runPod('codemode-mcp', { annotations: { 'run.codemode.profile': 'default' } });
    const lc = await runContainer(loose, { command: ['sleep', '1000'] });
    const lo = await hardening(lc);
    p.push(...want(lo.capEff === '0000000000000000' && lo.noNewPrivs === '1', `codemode-mcp with run.codemode.profile=default: ${JSON.stringify(lo)}`));
    return p;
  });

  await check('codemode-mcp refuses hostNetwork, hostPID and privileged pods, with the reason in the error kubelet shows', async () => {
    const p = [];
    const net = await errText(runPod('codemode-mcp', { network: 'NODE' }));
    p.push(...want(net && /host network namespace/.test(net), `hostNetwork: ${net}`));
    const pid = await errText(runPod('codemode-mcp', { pid: 'NODE' }));
    p.push(...want(pid && /host pid namespace/.test(pid), `hostPID: ${pid}`));
    let priv = await errText((async () => {
      const pod = await runPod('codemode-mcp', { privileged: true });
      await runContainer(pod, { command: ['sleep', '1000'], security: { privileged: true } });
    })());
    p.push(...want(priv && /privileged/.test(priv), `privileged: ${priv}`));
    const left = (await cri.ListPodSandbox({})).items.filter((x) => x.state === 'SANDBOX_READY' && x.runtime_handler === 'codemode-mcp');
    p.push(...want(left.length <= 1, `pods left: ${left.length}`));
    for (const m of [net, pid, priv]) if (m) console.log(`# error as kubelet gets it: ${m}`);
    return p;
  });
}

const t0 = Date.now();
if (only === 'all') {
  await podCases();
  await processCases();
  await resourceCases();
  await mcpCases();
} else if (only === 'cgroups') {
  await resourceCases();
}
// The node-level parent of every pod's cgroup (kubelet's /kubepods), last.
for (const b of removePodCgroup(`/cm-test-${env.tag}-cri`)) console.log(`# cgroup left behind: ${b}`);
console.log(`# tests/cri: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
const failed = tapEnd();
cri.close();
process.exit(failed ? 1 : 0);
