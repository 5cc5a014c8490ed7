// tests/cri/bench.mjs — pod start through containerd's CRI, runc vs codemode as the handler:
// RunPodSandbox + CreateContainer + StartContainer of a busybox `true`, timed from the first
// call to StartContainer's answer, RUNS runs per handler, interleaved (runc, codemode, runc, …)
// so that both get the same share of the machine's drift; the pod is stopped and removed after
// each run, untimed. Medians and the ratio, for a pod on the pod network (CNI bridge, as a real
// pod) and on the node's network (no CNI: the runtimes' share is larger).
//   node bench.mjs RUNS
import { cri, runPod, runContainer, removePod, removeLivePods } from './lib.mjs';

const runs = Number(process.argv[2] || 20);
const handlers = ['runc', 'codemode'];
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function podStart(handler, network) {
  const t0 = process.hrtime.bigint();
  const pod = await runPod(handler, { network });
  await runContainer(pod, { command: ['true'] });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  await removePod(pod);
  return ms;
}

const rows = [];
for (const network of ['POD', 'NODE']) {
  const times = Object.fromEntries(handlers.map((h) => [h, []]));
  for (const h of handlers) {
    // Warm: images unpacked, shims' binaries cached. A failure here only costs the warm-up.
    await podStart(h, network).catch(async (e) => {
      console.log(`# ${h}: warm-up failed: ${e.message}`);
      await removeLivePods();
    });
  }
  for (let i = 0; i < runs; i++) {
    for (const h of i % 2 ? [...handlers].reverse() : handlers) {
      try {
        times[h].push(await podStart(h, network));
      } catch (e) {
        console.log(`# ${h}: run ${i + 1} failed (not counted): ${e.message}`);
        await removeLivePods();
      }
    }
  }
  const m = Object.fromEntries(handlers.map((h) => [h, median(times[h])]));
  rows.push({ what: network === 'POD' ? 'pod start, pod network (CNI bridge)' : 'pod start, node network', ...m });
}
console.log(`# pod start through containerd's CRI (RunPodSandbox + CreateContainer + StartContainer of busybox true), ${runs} runs per handler, interleaved, medians`);
console.log('| | runc | codemode | codemode/runc | goal |');
console.log('|---|---|---|---|---|');
for (const r of rows) {
  console.log(`| ${r.what} | ${r.runc.toFixed(1)} ms | ${r.codemode.toFixed(1)} ms | ${(r.codemode / r.runc).toFixed(2)} | ≤ 0.7 |`);
}
cri.close();
