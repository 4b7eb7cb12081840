// kguard under JupyterLab's own kernel client: @jupyterlab/services (the library JupyterLab's
// notebook uses to talk to kernels) in node with the `ws` WebSocket, through Debian's Jupyter
// Server, with a kguard kernelspec. What JupyterLab would show, checked on the client's objects:
//   1. start: the kernel reaches `idle`; execute prints.
//   2. Run All with an emulated sticky CUDA error (KGUARD_EMULATE=cuda-assert:step=2 in the
//      kernelspec env; python/kguard/emulate.py, no GPU): the failing cell's reply is the real
//      error, each queued cell's future resolves (no hanging asterisk) with a KernelRestarted
//      error reply and an error output, kguard's notice arrives as display_data, the kernel
//      status never turns `dead` and ends `idle`; the next cell runs in a fresh inner kernel.
//   3. the toolbar interrupt (POST /api/kernels/{id}/interrupt): a sleeping cell ends with
//      KeyboardInterrupt; the kernel (and its inner process) stays.
//   4. the toolbar restart (POST /api/kernels/{id}/restart): a new kguard process serves the
//      next cell, the old kguard and its inner kernel are gone.
// Everything started under the server carries a marker variable; the test fails if any of those
// processes is still alive after shutdown.
//
// Environment: KGUARD_BIN (required), KGUARD_PYTHON (default /usr/bin/python3),
// KG_LAB_BUDGET_MS (240000, below ctest's TIMEOUT), KG_LAB_KEEP=1 keeps the temp dir.

import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PYTHON = process.env.KGUARD_PYTHON || '/usr/bin/python3';
const KERNEL_NAME = 'kguard-lab';
const BUDGET_MS = Number(process.env.KG_LAB_BUDGET_MS || 240_000);

const t0 = Date.now();
function log(msg) { console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${msg}`); }
class Fail extends Error {}
function fail(msg) { throw new Fail(msg); }
function check(cond, msg) { if (!cond) fail(msg); }

async function pollUntil(what, timeoutMs, fn, intervalMs = 100) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

function withTimeout(p, ms, what) {
  let timer;
  return Promise.race([p, new Promise((_, rej) => {
    timer = setTimeout(() => rej(new Fail(`timed out after ${ms} ms waiting for ${what}`)), ms);
  })]).finally(() => clearTimeout(timer));
}

// ---------------------------------------------------------------------------------------------
// @jupyterlab/services and ws, installed from the committed lockfile when absent.

function lockedVersion(pkg) {
  const lock = JSON.parse(fs.readFileSync(path.join(HERE, 'package-lock.json'), 'utf8'));
  return lock.packages[`node_modules/${pkg}`].version;
}
function installedVersion(pkg) {
  try {
    return JSON.parse(fs.readFileSync(path.join(HERE, 'node_modules', pkg, 'package.json'),
                                      'utf8')).version;
  } catch { return null; }
}
async function loadClient() {
  const pkgs = ['@jupyterlab/services', 'ws'];
  if (pkgs.some((p) => installedVersion(p) !== lockedVersion(p))) {
    log(`node_modules in ${HERE} missing or stale: running npm ci`);
    const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: HERE, stdio: 'inherit' });
    if (npm.error && npm.error.code === 'ENOENT')
      fail('npm is not installed: install it (apt-get install npm) or run `npm ci` in ' + HERE);
    if (npm.status !== 0 || pkgs.some((p) => installedVersion(p) !== lockedVersion(p)))
      fail(`npm ci in ${HERE} failed (exit ${npm.status}); is the npm registry reachable?`);
  }
  const services = await import('@jupyterlab/services');
  const ws = (await import('ws')).default;
  // The same WebSocket, logging why a connection ends (JupyterLab reconnects silently).
  class LoggedWebSocket extends ws {
    constructor(...args) {
      super(...args);
      this.addEventListener('close', (e) => log(`websocket closed: code ${e.code} ${e.reason || ''}`));
      this.addEventListener('error', (e) => log(`websocket error: ${e.message || e.error || e}`));
    }
  }
  return { services, WebSocket: LoggedWebSocket };
}

// ---------------------------------------------------------------------------------------------
// Scratch dirs, kernelspec, Jupyter Server.

function makeScratch() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kguard-lab-'));
  const d = (n) => { const p = path.join(root, n); fs.mkdirSync(p, { recursive: true }); return p; };
  return { root, data: d('data'), config: d('config'), runtime: d('runtime'),
           ipython: d('ipython'), state: d('state'), work: d('work'), prefix: d('prefix') };
}

function installKernelspec(kguardBin, scratch) {
  const kdir = path.join(scratch.prefix, 'share', 'jupyter', 'kernels', KERNEL_NAME);
  const r = spawnSync(kguardBin, ['install', '--prefix', scratch.prefix, '--name', KERNEL_NAME,
                                  '--kernel', 'python3'],
                      { encoding: 'utf8', env: { ...process.env, KGUARD_STATE_DIR: scratch.state } });
  if (r.status !== 0 || !fs.existsSync(path.join(kdir, 'kernel.json')))
    fail(`kguard install --prefix failed (exit ${r.status}): ${r.stderr}`);
  const spec = JSON.parse(fs.readFileSync(path.join(kdir, 'kernel.json'), 'utf8'));
  // The emulated sticky CUDA error, as a user would put any variable in a kernelspec.
  spec.env = { ...(spec.env || {}), KGUARD_EMULATE: 'cuda-assert:step=2' };
  fs.writeFileSync(path.join(kdir, 'kernel.json'), JSON.stringify(spec, null, 1));
  log(`kernelspec by \`kguard install\` in ${kdir}: ${JSON.stringify(spec.argv)}`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

class Server {
  constructor(scratch, env) {
    this.scratch = scratch;
    this.env = env;
    this.token = crypto.randomBytes(24).toString('hex');
    this.logPath = path.join(scratch.root, 'jupyter-server.log');
  }

  async start() {
    for (let attempt = 1; ; attempt++) {
      this.port = await freePort();
      const args = ['-m', 'jupyter_server', '--no-browser', '--ip=127.0.0.1', `--port=${this.port}`,
                    '--port-retries=0', `--ServerApp.token=${this.token}`,
                    `--ServerApp.root_dir=${this.scratch.work}`, '--ServerApp.password=',
                    '--log-level=INFO'];
      if (process.getuid && process.getuid() === 0) args.push('--allow-root');
      const out = fs.openSync(this.logPath, 'a');
      this.proc = spawn(PYTHON, args, { cwd: this.scratch.work, env: this.env, detached: true,
                                        stdio: ['ignore', out, out] });
      fs.closeSync(out);
      this.exitInfo = null;
      this.exited = new Promise((r) => this.proc.on('exit', (code, sig) => {
        this.exitInfo = { code, sig };
        r(this.exitInfo);
      }));
      log(`jupyter server pid ${this.proc.pid} on 127.0.0.1:${this.port}`);
      try {
        await pollUntil('Jupyter Server /api/status', 60_000, async () => {
          if (this.exitInfo) return 'exited';
          try { return (await this.api('GET', '/api/status')).ok ? 'up' : null; } catch { return null; }
        });
      } catch (e) { this.dumpLog(); throw e; }
      if (!this.exitInfo) return;
      if (attempt < 3 && /already in use/i.test(fs.readFileSync(this.logPath, 'utf8'))) continue;
      this.dumpLog();
      fail(`jupyter server exited during start-up (${JSON.stringify(this.exitInfo)})`);
    }
  }

  url(p) { return `http://127.0.0.1:${this.port}${p}`; }
  api(method, p, timeoutMs = 10_000) {
    return fetch(this.url(p), { method, headers: { Authorization: `token ${this.token}` },
                                signal: AbortSignal.timeout(timeoutMs) });
  }
  dumpLog() {
    try {
      console.log(`----- jupyter server log -----\n${fs.readFileSync(this.logPath, 'utf8')
        .slice(-20000)}\n----- end of server log -----`);
    } catch { /* none */ }
  }

  async stop() {
    if (!this.proc || this.exitInfo) return;
    try {
      const r = await this.api('GET', '/api/kernels');
      for (const k of await r.json()) await this.api('DELETE', `/api/kernels/${k.id}`, 30_000);
      await this.api('POST', '/api/shutdown');
    } catch (e) { log(`polite shutdown failed: ${e.message}`); }
    const waitExit = (ms) => Promise.race([this.exited, new Promise((r) => setTimeout(() => r(null), ms))]);
    for (const sig of [null, 'SIGTERM', 'SIGKILL']) {
      if (sig) { log(`server still running: ${sig}`); try { process.kill(-this.proc.pid, sig); } catch { /* gone */ } }
      if (await waitExit(sig ? 10_000 : 20_000)) break;
    }
  }
}

// Processes started under the server carry KGUARD_LAB_MARK=<random> in their environment.
function markedProcesses(mark) {
  const needle = Buffer.from(`KGUARD_LAB_MARK=${mark}\0`);
  const found = [];
  for (const ent of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(ent) || Number(ent) === process.pid) continue;
    try {
      if (!fs.readFileSync(`/proc/${ent}/environ`).includes(needle)) continue;
      if (/\) Z /.test(fs.readFileSync(`/proc/${ent}/stat`, 'utf8'))) continue;
      found.push({ pid: Number(ent),
                   cmd: fs.readFileSync(`/proc/${ent}/cmdline`).toString().replace(/\0/g, ' ').trim() });
    } catch { /* vanished */ }
  }
  return found;
}
function alive(pid) { try { process.kill(pid, 0); return true; } catch { return false; } }

// ---------------------------------------------------------------------------------------------
// The client side, as JupyterLab's notebook does it.

// Run one cell: collect its iopub messages; resolve with {reply, iopub}. Rejects only when the
// client itself disposes the future (what JupyterLab does on `restarting`).
function runCell(kernel, code) {
  const iopub = [];
  const future = kernel.requestExecute({ code, stop_on_error: true });
  future.onIOPub = (m) => { iopub.push(m); };
  const done = future.done.then((reply) => ({ reply, iopub, future }));
  return { future, iopub, done };
}
const stdoutOf = (iopub) => iopub.filter((m) => m.header.msg_type === 'stream'
  && m.content.name === 'stdout').map((m) => m.content.text).join('');
const kguardNotices = (msgs, event) => msgs.filter((m) => m.header.msg_type === 'display_data'
  && m.content.metadata && m.content.metadata.kguard
  && (!event || m.content.metadata.kguard.event === event));

async function exec(kernel, code, ms = 60_000) {
  const { reply, iopub } = await withTimeout(runCell(kernel, code).done, ms, `cell ${JSON.stringify(code)}`);
  return { reply, iopub, out: stdoutOf(iopub) };
}
async function pids(kernel) {
  const { out, reply } = await exec(kernel, 'import os; print(os.getpid(), os.environ["JPY_PARENT_PID"])');
  check(reply.content.status === 'ok', `pid cell failed: ${JSON.stringify(reply.content)}`);
  const [inner, kguard] = out.trim().split(/\s+/).map(Number);
  return { inner, kguard };
}

async function scenario(services, WebSocket, server, scratch) {
  const { ServerConnection, KernelManager } = services;
  const serverSettings = ServerConnection.makeSettings({
    baseUrl: server.url('/'), wsUrl: `ws://127.0.0.1:${server.port}/`, token: server.token,
    appendToken: true, WebSocket, fetch, Request, Headers });
  const manager = new KernelManager({ serverSettings });
  await manager.ready;
  const kernel = await manager.startNew({ name: KERNEL_NAME });
  const statuses = [];
  kernel.statusChanged.connect((_, s) => { statuses.push(s); });
  log(`kernel ${kernel.id} started (${kernel.name})`);
  await withTimeout(kernel.info, 60_000, 'kernel_info from the kguard kernel');
  await pollUntil('kernel status idle', 60_000, async () => kernel.status === 'idle');

  // 1. execute
  let r = await exec(kernel, 'print(6 * 7)');
  check(r.reply.content.status === 'ok' && r.out === '42\n', `print(6 * 7): ${JSON.stringify(r)}`);
  const before = await pids(kernel);
  log(`1. executed; kguard pid ${before.kguard}, inner kernel pid ${before.inner}`);

  // 2. Run All with the emulated sticky error: four cells sent at once, as JupyterLab's
  //    "Run All" does; the second one fails, the last two are queued behind it. The first cell
  //    runs until the four have reached kguard, as a notebook's earlier cells usually do: it
  //    waits for a file the test writes once a control-channel kernel_info sent after the cells
  //    has come back through Jupyter Server and kguard. (A failure faster than Jupyter Server
  //    forwards the queued cells is the stale-request rule's case: kg_gate_stale in
  //    supervisor/kernel/decide/kg_gate.h.)
  const go = path.join(scratch.work, 'go');
  const cells = ['import os, time, kguard.emulate as em\n' +
                 `while not os.path.exists(${JSON.stringify(go)}): time.sleep(0.01)\n` +
                 'em.step(1)\nprint("step 1 ok")',
                 'em.step(2)\nprint("not reached")',
                 'print("queued 1")', 'print("queued 2")'];
  const mark = statuses.length;
  const runs = cells.map((c) => runCell(kernel, c));
  const barrier = kernel.sendControlMessage(services.KernelMessage.createMessage({
    msgType: 'kernel_info_request', channel: 'control', session: kernel.clientId,
    username: kernel.username, content: {} }), true, true);
  await withTimeout(barrier.done, 30_000, 'a control kernel_info sent behind the Run All cells');
  fs.writeFileSync(go, 'go');
  const results = await withTimeout(Promise.all(runs.map((x) => x.done)), 120_000,
                                    'every Run All cell to get its reply');
  check(results[0].reply.content.status === 'ok', 'cell 1 should run');
  const failing = results[1].reply.content;
  check(failing.status === 'error' && failing.ename !== 'KernelRestarted'
        && /device-side assert triggered/.test(failing.evalue),
        `cell 2 should fail with the device assert: ${JSON.stringify(failing)}`);
  // When the failing cell's error reached this client: a cell sent before it was sent before
  // the user could see the failure, so it must not run (not even in the fresh kernel).
  const errSeen = results[1].iopub.find((m) => m.header.msg_type === 'error');
  for (const [i, q] of results.slice(2).entries()) {
    const c = q.reply.content;
    const sent = runs[i + 2].future.msg.header.date;
    check(c.status === 'error' && c.ename === 'KernelRestarted',
          `queued cell ${i + 3}, sent at ${sent} (the failure reached the client at ` +
          `${errSeen && errSeen.header.date}), should get a KernelRestarted reply, got ` +
          `${JSON.stringify(c)}: ` + (c.status === 'ok' ? 'it ran in the fresh kernel, i.e. it ' +
          'reached kguard after the gate closed and kguard delivered it (a request sent before ' +
          'the failure was visible must be answered KernelRestarted)' : ''));
    check(q.iopub.some((m) => m.header.msg_type === 'error' && m.content.ename === 'KernelRestarted'),
          'a queued cell should show a KernelRestarted error output');
    check(!/queued/.test(stdoutOf(q.iopub)), 'a queued cell ran');
  }
  // JupyterLab's notebook shows what reaches the cell's future, i.e. what arrives before the
  // cell's reply and idle status: the notice must be among them.
  const notice = kguardNotices(results[1].iopub, 'sticky-restart')[0];
  check(notice, 'kguard\'s sticky-restart notice should be in the failing cell\'s outputs; got ' +
        results[1].iopub.map((m) => m.header.msg_type).join(','));
  const text = notice.content.data['text/plain'] || '';
  check(/restart/i.test(text), `the notice should say kguard restarted the kernel: ${text}`);
  // JupyterLab cancels handling of an iopub message whose header.session is not the one of the
  // latest message received ("Canceling handling of old message"): then iopubMessage listeners
  // (extensions, the log console) never see it. kguard writes it under the session of the
  // failing cell's busy, as the cell's other messages.
  const others = new Set(results[1].iopub.filter((m) => m !== notice).map((m) => m.header.session));
  check(others.size === 1 && others.has(notice.header.session),
        `the notice's header.session ${notice.header.session} should be the one of the failing ` +
        `cell's other messages (${[...others]}): else JupyterLab cancels handling of the notice ` +
        `("Canceling handling of old message") and its iopubMessage listeners never get it`);
  await pollUntil('kernel status idle after the restart', 90_000, async () => kernel.status === 'idle');
  const seen = statuses.slice(mark);
  check(!seen.includes('dead'), `JupyterLab must never see the kernel dead: ${seen}`);
  const after = await pids(kernel);
  check(after.inner !== before.inner && after.kguard === before.kguard,
        `a fresh inner kernel under the same kguard: ${JSON.stringify({ before, after })}`);
  log(`2. Run All: device assert, 2 KernelRestarted replies, notice; statuses ${[...new Set(seen)]}`);

  // 3. toolbar interrupt: POST /api/kernels/{id}/interrupt (what kernel.interrupt() sends)
  const sleeper = runCell(kernel, 'import time\nprint("sleeping", flush=True)\ntime.sleep(60)');
  await pollUntil('the sleeping cell\'s output', 30_000, async () => /sleeping/.test(stdoutOf(sleeper.iopub)));
  const tInt = Date.now();
  await kernel.interrupt();
  const slept = await withTimeout(sleeper.done, 20_000, 'the interrupted cell\'s reply');
  check(slept.reply.content.ename === 'KeyboardInterrupt',
        `interrupt should end the cell with KeyboardInterrupt: ${JSON.stringify(slept.reply.content)}`);
  const afterInt = await pids(kernel);
  check(afterInt.inner === after.inner, 'an interrupt must not restart the kernel');
  log(`3. interrupt: KeyboardInterrupt after ${Date.now() - tInt} ms, same kernel`);

  // 4. toolbar restart: POST /api/kernels/{id}/restart (what kernel.restart() sends)
  const tRes = Date.now();
  await withTimeout(kernel.restart(), 60_000, 'the REST restart');
  await pollUntil('kernel status idle after the toolbar restart', 60_000, async () => kernel.status === 'idle');
  r = await exec(kernel, 'print("after restart")');
  check(r.out === 'after restart\n', `a cell after the restart: ${JSON.stringify(r.reply.content)}`);
  const afterRes = await pids(kernel);
  check(afterRes.kguard !== after.kguard, 'the toolbar restart should start a new kguard');
  await pollUntil('the old kguard and inner kernel to exit', 30_000,
                  async () => !alive(after.kguard) && !alive(afterInt.inner));
  log(`4. toolbar restart: new kguard ${afterRes.kguard} serving after ${Date.now() - tRes} ms; old ones gone`);

  await withTimeout(kernel.shutdown(), 60_000, 'kernel shutdown');
  manager.dispose();
}

async function main() {
  const bin = process.env.KGUARD_BIN;
  if (!bin || !fs.existsSync(bin)) fail(`KGUARD_BIN is not set or missing (${bin})`);
  const js = spawnSync(PYTHON, ['-c', 'import jupyter_server; print(jupyter_server.__version__)'],
                       { encoding: 'utf8' });
  if (js.status !== 0) fail(`${PYTHON} cannot import jupyter_server: apt-get install python3-jupyter-server`);
  const { services, WebSocket } = await loadClient();
  log(`jupyter_server ${js.stdout.trim()}, @jupyterlab/services ${installedVersion('@jupyterlab/services')}`);
  const scratch = makeScratch();
  installKernelspec(path.resolve(bin), scratch);
  const mark = crypto.randomBytes(8).toString('hex');
  const env = { ...process.env, KGUARD_LAB_MARK: mark, KGUARD_STATE_DIR: scratch.state,
                JUPYTER_PATH: path.join(scratch.prefix, 'share', 'jupyter'),
                JUPYTER_DATA_DIR: scratch.data, JUPYTER_CONFIG_DIR: scratch.config,
                JUPYTER_RUNTIME_DIR: scratch.runtime, IPYTHONDIR: scratch.ipython, PYTHONPATH: '' };
  const server = new Server(scratch, env);
  let failed = null;
  try {
    await server.start();
    await withTimeout(scenario(services, WebSocket, server, scratch), BUDGET_MS, 'the whole scenario');
  } catch (e) { failed = e; }
  await server.stop();
  await pollUntil('all server and kernel processes to exit', 15_000,
                  async () => markedProcesses(mark).length === 0).catch(() => {});
  const left = markedProcesses(mark);
  for (const p of left) { try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ } }
  if (failed) { server.dumpLog(); }
  if (!failed && left.length) failed = new Fail(`processes left after shutdown: ${JSON.stringify(left)}`);
  if (process.env.KG_LAB_KEEP !== '1') fs.rmSync(scratch.root, { recursive: true, force: true });
  else log(`kept ${scratch.root}`);
  if (failed) throw failed;
  log('PASS');
}

main().then(() => process.exit(0), (e) => {
  console.error(`FAIL: ${e instanceof Fail ? e.message : (e && e.stack) || e}`);
  process.exit(1);
});
