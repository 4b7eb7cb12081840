// kguard end to end in a real browser: Debian's Jupyter Notebook (classic UI) with a kguard
// kernelspec, driven in Debian's headless Chromium through playwright-core.
//
// What it checks, on the page, as a user would see it:
//   1. Cell > Run All with the emulated CUDA device-side assert enabled
//      (KGUARD_EMULATE=cuda-assert:step=60:once in the kernel's environment): the failing cell
//      shows the error and kguard's notice (restarted, restored step N < 60); the cells queued
//      behind it show KernelRestarted errors and none of their own output.
//   2. The kernel is usable afterwards: a new cell `print(1+1)` prints 2.
//   3. Cell > Run All Above, then Cell > Run All Below on the failing cell: training says it
//      resumed from step N (the one kguard's notice names), no cell fails, a RESULT line
//      appears (and its resumed_from=, if any, is N). The incident record agrees on N.
//   4. The Run-All race (issue 9), repeated KG_BROWSER_RACE_ROUNDS times (default 6): a second
//      notebook, on a kernelspec with --stale-window 0 (the rule then ends at kguard's notice,
//      so the next round's Run All runs), whose failing cell writes PyTorch's assertion line to
//      fd 2 before raising the device-side assert text (raw stderr may reach kguard before the
//      queued requests do). Each round: the failing cell shows the error and the notice, the
//      three cells queued behind it show KernelRestarted, and their marker files never appear:
//      no queued cell ran in the fresh kernel, whatever the order of arrival.
// Screenshots (browser-after-fault.png, browser.png; browser-failure.png on failure) and the
// server log are saved in KG_BROWSER_ARTIFACTS; browser-notice.png is the failing cell's end,
// the notice and the first queued cell: the picture in the README (docs/img/notice.png).
//
// Environment: KGUARD_BIN (required), KGUARD_SOURCE_DIR (default: two levels up),
// KGUARD_PYTHON (default /usr/bin/python3), KG_BROWSER_ARTIFACTS (default ./artifacts),
// KG_BROWSER_NOTEBOOK (path of the notebook to drive; default: examples/train_classifier.ipynb
// when it exists, else tests/browser/assert_demo.ipynb), KG_BROWSER_EMULATE_STEP (60),
// KG_BROWSER_BUDGET_MS (360000, below ctest's TIMEOUT), KG_BROWSER_KEEP=1 keeps the temp dir.
//
// The server, its kernels and everything they started are stopped when the test ends, pass or
// fail; every process started under the server carries a marker variable, and the test fails
// if any of them is still alive after shutdown.

import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SOURCE_DIR = process.env.KGUARD_SOURCE_DIR || path.resolve(HERE, '..', '..');
const PYTHON = process.env.KGUARD_PYTHON || '/usr/bin/python3';
const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = path.resolve(process.env.KG_BROWSER_ARTIFACTS || path.join(HERE, 'artifacts'));
const KERNEL_NAME = 'kguard-test';
const EMULATE_STEP = Number(process.env.KG_BROWSER_EMULATE_STEP || 60);
const TOTAL_BUDGET_MS = Number(process.env.KG_BROWSER_BUDGET_MS || 360_000);
const RACE_ROUNDS = Number(process.env.KG_BROWSER_RACE_ROUNDS || 6);
const RACE_KERNEL = 'kguard-race';

const t0 = Date.now();
function log(msg) {
  const s = ((Date.now() - t0) / 1000).toFixed(1).padStart(6);
  console.log(`[${s}s] ${msg}`);
}
class Fail extends Error {}
function fail(msg) { throw new Fail(msg); }

// ---------------------------------------------------------------------------------------------
// Prerequisites: chromium and playwright-core (installed from the committed lockfile if absent).

function lockedPlaywrightVersion() {
  const lock = JSON.parse(fs.readFileSync(path.join(HERE, 'package-lock.json'), 'utf8'));
  return lock.packages['node_modules/playwright-core'].version;
}

function installedPlaywrightVersion() {
  const p = path.join(HERE, 'node_modules', 'playwright-core', 'package.json');
  try { return JSON.parse(fs.readFileSync(p, 'utf8')).version; } catch { return null; }
}

async function loadPlaywright() {
  const want = lockedPlaywrightVersion();
  if (installedPlaywrightVersion() !== want) {
    log(`playwright-core ${want} not in ${HERE}/node_modules: running npm ci`);
    const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], {
      cwd: HERE, stdio: 'inherit',
      // playwright-core never downloads a browser; say so anyway in case that ever changes.
      env: { ...process.env, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1' },
    });
    if (npm.error && npm.error.code === 'ENOENT')
      fail('npm is not installed: install it (apt-get install npm) or run `npm ci` in tests/browser');
    if (npm.status !== 0 || installedPlaywrightVersion() !== want)
      fail(`npm ci in ${HERE} failed (exit ${npm.status}); is the npm registry reachable?`);
  }
  return (await import(path.join(HERE, 'node_modules', 'playwright-core', 'index.mjs'))).chromium;
}

function checkPrerequisites() {
  if (!fs.existsSync(CHROMIUM))
    fail(`${CHROMIUM} not found: install Debian's chromium (apt-get install chromium)`);
  const nb = spawnSync(PYTHON, ['-c', 'import notebook, sys; print(notebook.__version__)'],
                       { encoding: 'utf8' });
  if (nb.status !== 0)
    fail(`${PYTHON} cannot import notebook: apt-get install jupyter-notebook (python3-notebook)`);
  log(`notebook ${nb.stdout.trim()}, chromium at ${CHROMIUM}`);
  const bin = process.env.KGUARD_BIN;
  if (!bin || !fs.existsSync(bin)) fail(`KGUARD_BIN is not set or missing (${bin})`);
  return path.resolve(bin);
}

// ---------------------------------------------------------------------------------------------
// Scratch directories, kernelspec, notebook copy.

function makeScratch() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kguard-e2e-'));
  const d = (n) => { const p = path.join(root, n); fs.mkdirSync(p, { recursive: true }); return p; };
  return {
    root, data: d('data'), config: d('config'), runtime: d('runtime'), ipython: d('ipython'),
    state: d('state'), work: d('work'), prefix: d('prefix'), chrome: d('chrome'),
  };
}

function installKernelspec(kguardBin, scratch) {
  const kdir = path.join(scratch.prefix, 'share', 'jupyter', 'kernels', KERNEL_NAME);
  const r = spawnSync(kguardBin, ['install', '--prefix', scratch.prefix, '--name', KERNEL_NAME,
                                  '--kernel', 'python3'],
                      { encoding: 'utf8', env: { ...process.env, KGUARD_STATE_DIR: scratch.state } });
  if (r.status === 0 && fs.existsSync(path.join(kdir, 'kernel.json'))) {
    log(`kernelspec installed by \`kguard install\` in ${kdir}`);
  } else {
    // `kguard install` not available: write the wrapper kernelspec the way it would.
    log(`kguard install failed (exit ${r.status}: ${(r.stderr || '').trim()}); writing kernel.json`);
    fs.mkdirSync(kdir, { recursive: true });
    const spec = {
      argv: [kguardBin, 'kernel', '-f', '{connection_file}', '--',
             '/usr/bin/python3', '-m', 'ipykernel_launcher', '-f', '{connection_file}'],
      display_name: 'Python 3 (kguard-test)',
      language: 'python',
      metadata: { debugger: false },
    };
    fs.writeFileSync(path.join(kdir, 'kernel.json'), JSON.stringify(spec, null, 1));
  }
  const spec = JSON.parse(fs.readFileSync(path.join(kdir, 'kernel.json'), 'utf8'));
  log(`kernel argv: ${JSON.stringify(spec.argv)}`);
  return spec;
}

function pickNotebook() {
  if (process.env.KG_BROWSER_NOTEBOOK) return path.resolve(process.env.KG_BROWSER_NOTEBOOK);
  const example = path.join(SOURCE_DIR, 'examples', 'train_classifier.ipynb');
  if (fs.existsSync(example)) return example;
  return path.join(HERE, 'assert_demo.ipynb');
}

// The notebook is copied into the server's (temporary) notebook dir with its kernelspec
// metadata pointing at our kernel, so the page opens it on kguard without a kernel chooser.
function stageNotebook(src, scratch, spec) {
  const nb = JSON.parse(fs.readFileSync(src, 'utf8'));
  nb.metadata = nb.metadata || {};
  nb.metadata.kernelspec = { name: KERNEL_NAME, display_name: spec.display_name,
                             language: spec.language || 'python' };
  const name = path.basename(src);
  fs.writeFileSync(path.join(scratch.work, name), JSON.stringify(nb, null, 1));
  return { name, nb };
}

// ---------------------------------------------------------------------------------------------
// Notebook server.

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

async function pollUntil(what, timeoutMs, fn, intervalMs = 200) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

class Server {
  constructor(scratch, env) {
    this.scratch = scratch;
    this.env = env;
    this.token = crypto.randomBytes(24).toString('hex');
    this.logPath = path.join(scratch.root, 'notebook-server.log');
    this.proc = null;
    this.exited = null;
  }

  async start() {
    for (let attempt = 1; ; attempt++) {
      this.port = await freePort();
      const args = ['-m', 'notebook', '--no-browser', '--ip=127.0.0.1', `--port=${this.port}`,
                    '--port-retries=0', `--NotebookApp.token=${this.token}`,
                    `--notebook-dir=${this.scratch.work}`, '--NotebookApp.open_browser=False',
                    '--NotebookApp.password=', '--log-level=INFO'];
      if (process.getuid && process.getuid() === 0) args.push('--allow-root');
      const out = fs.openSync(this.logPath, 'a');
      // Its own process group, so a last-resort kill reaches everything it spawned in it.
      this.proc = spawn(PYTHON, args, { cwd: this.scratch.work, env: this.env, detached: true,
                                        stdio: ['ignore', out, out] });
      fs.closeSync(out);
      this.exited = new Promise((r) => this.proc.on('exit', (code, sig) => r({ code, sig })));
      this.proc.exitInfo = null;
      this.exited.then((x) => { this.proc.exitInfo = x; });
      log(`notebook server pid ${this.proc.pid} on 127.0.0.1:${this.port}`);
      try {
        await pollUntil('the notebook server /api/status', 60_000, async () => {
          if (this.proc.exitInfo) return 'exited';
          try {
            const r = await this.api('GET', '/api/status');
            return r.ok ? 'up' : null;
          } catch { return null; }
        });
      } catch (e) { this.dumpLog(); throw e; }
      if (!this.proc.exitInfo) return;
      const text = fs.readFileSync(this.logPath, 'utf8');
      if (attempt < 3 && /already in use|Address already in use/i.test(text)) continue;
      this.dumpLog();
      fail(`notebook server exited during start-up (${JSON.stringify(this.proc.exitInfo)})`);
    }
  }

  url(p) { return `http://127.0.0.1:${this.port}${p}`; }

  api(method, p) {
    return fetch(this.url(p), { method, headers: { Authorization: `token ${this.token}` },
                                signal: AbortSignal.timeout(10_000) });
  }

  dumpLog() {
    try {
      const text = fs.readFileSync(this.logPath, 'utf8');
      console.log(`----- notebook server log (${this.logPath}) -----\n${text.slice(-20000)}` +
                  '\n----- end of server log -----');
    } catch { /* no log */ }
  }

  // Polite first (kernels through the API, then /api/shutdown), then signals to the group.
  async stop() {
    if (!this.proc || this.proc.exitInfo) return;
    try {
      const r = await this.api('GET', '/api/kernels');
      for (const k of await r.json()) {
        log(`shutting down kernel ${k.id} (${k.name})`);
        const d = await fetch(this.url(`/api/kernels/${k.id}`), {
          method: 'DELETE', headers: { Authorization: `token ${this.token}` },
          signal: AbortSignal.timeout(30_000) });
        if (d.status !== 204) log(`kernel ${k.id} DELETE answered ${d.status}`);
      }
      await this.api('POST', '/api/shutdown');
    } catch (e) { log(`polite shutdown failed: ${e.message}`); }
    const waitExit = (ms) => Promise.race([this.exited,
                                           new Promise((r) => setTimeout(() => r(null), ms))]);
    let x = await waitExit(20_000);
    if (!x) {
      log('notebook server still running: SIGTERM to its process group');
      try { process.kill(-this.proc.pid, 'SIGTERM'); } catch { /* gone */ }
      x = await waitExit(10_000);
    }
    if (!x) {
      log('notebook server still running: SIGKILL to its process group');
      try { process.kill(-this.proc.pid, 'SIGKILL'); } catch { /* gone */ }
      x = await waitExit(10_000);
    }
    log(`notebook server exited: ${JSON.stringify(x)}`);
  }
}

// Every process started under the server inherits KGUARD_E2E_MARK=<random>; kguard may move the
// inner kernel into its own process group or session, so the environment is what finds them.
function markedProcesses(mark) {
  const needle = Buffer.from(`KGUARD_E2E_MARK=${mark}\0`);
  const found = [];
  for (const ent of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(ent) || Number(ent) === process.pid) continue;
    try {
      const env = fs.readFileSync(`/proc/${ent}/environ`);
      if (env.includes(needle)) {
        const cmd = fs.readFileSync(`/proc/${ent}/cmdline`).toString().replace(/\0/g, ' ').trim();
        const stat = fs.readFileSync(`/proc/${ent}/stat`, 'utf8');
        if (/\) Z /.test(stat)) continue;   // zombies are gone, only not yet reaped
        found.push({ pid: Number(ent), cmd });
      }
    } catch { /* vanished or not ours */ }
  }
  return found;
}

async function reapMarked(mark) {
  try {
    await pollUntil('all server and kernel processes to exit', 15_000,
                    async () => markedProcesses(mark).length === 0);
    return [];
  } catch {
    const left = markedProcesses(mark);
    for (const p of left) { try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ } }
    return left;
  }
}

// ---------------------------------------------------------------------------------------------
// The page.

const cellSel = '#notebook-container > .cell';

async function cellTexts(page) {
  return page.$$eval(cellSel, (cells) => cells.map((c) => ({
    code: c.classList.contains('code_cell'),
    prompt: (c.querySelector('.input_prompt') || {}).textContent || '',
    source: c.querySelector('.CodeMirror')
      ? c.querySelector('.CodeMirror').CodeMirror.getValue() : '',
    errors: [...c.querySelectorAll('.output_error')].map((e) => e.textContent),
    streams: [...c.querySelectorAll('.output_stream')].map((e) => e.textContent),
    stdout: [...c.querySelectorAll('.output_stdout')].map((e) => e.textContent),
    markdown: [...c.querySelectorAll('.output_markdown')].map((e) => e.textContent),
    output: (c.querySelector('.output') || {}).textContent || '',
  })));
}

async function menu(page, menuId, itemId) {
  await page.click(`#${menuId}`);
  await page.locator(`#${itemId} > a`).click({ timeout: 10_000 });
}

async function selectCell(page, index) {
  // A click on the cell's prompt selects it in command mode, like a user's click in the margin.
  await page.locator(cellSel).nth(index).locator('.input_prompt').click();
}

async function waitKernelIdle(page, timeoutMs) {
  await page.locator('#kernel_indicator_icon.kernel_idle_icon').waitFor({ timeout: timeoutMs });
}

async function waitNoPendingCells(page, timeoutMs) {
  await page.waitForFunction(
    (sel) => [...document.querySelectorAll(`${sel} .input_prompt`)]
      .every((p) => !p.textContent.includes('[*]')),
    cellSel, { timeout: timeoutMs, polling: 250 });
}

async function screenshot(page, file) {
  // The classic UI scrolls inside #site, which is sized to the viewport: measure the notebook
  // itself (from a small viewport, or #notebook keeps the last one's height) and grow the
  // viewport so the whole notebook is in the shot.
  await page.setViewportSize({ width: 1280, height: 800 });
  const h = await page.evaluate(() => {
    const nb = document.querySelector('#notebook');
    const header = document.querySelector('#header');
    return (header ? header.offsetHeight : 0) + (nb ? nb.scrollHeight : 1000) + 40;
  });
  await page.setViewportSize({ width: 1280, height: Math.min(Math.max(h, 800), 8000) });
  fs.mkdirSync(path.dirname(file), { recursive: true });
  await page.screenshot({ path: file });
  log(`screenshot: ${file}`);
}

// The picture the README shows: the end of the failing cell's error, kguard's notice under it,
// and the first queued cell's KernelRestarted error, cut from the page as the user sees it.
// Taken after screenshot() has grown the viewport to the whole notebook, so every box is in it.
async function noticeShot(page, train, next, file) {
  const cell = page.locator(cellSel).nth(train);
  const box = await cell.boundingBox();
  const err = await cell.locator('.output_error').last().boundingBox();
  const notice = await cell.locator('.output_markdown', { hasText: /kguard/i }).last().boundingBox();
  const after = next === undefined ? null : await page.locator(cellSel).nth(next).boundingBox();
  if (!box || !err || !notice) fail('the failing cell, its error or its notice has no box on the page');
  const top = Math.max(box.y, err.y + err.height - 136);   // the error's last lines
  const bottom = Math.max(notice.y + notice.height, after ? after.y + after.height : 0) + 8;
  await page.screenshot({ path: file, clip: { x: Math.max(0, box.x - 8), y: top,
                                              width: box.width + 16, height: bottom - top } });
  log(`screenshot: ${file}`);
}

async function scenario(page, server, nbName) {
  const url = server.url(`/notebooks/${encodeURIComponent(nbName)}?token=${server.token}`);
  log(`opening ${url.replace(server.token, '<token>')}`);
  await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 30_000 });
  await page.locator(cellSel).first().waitFor({ timeout: 30_000 });
  await waitKernelIdle(page, 60_000);
  const kname = (await page.locator('.kernel_indicator_name').textContent()).trim();
  log(`kernel ready on the page: "${kname}"`);

  let cells = await cellTexts(page);
  if (!cells.some((c) => c.code && /kguard/.test(c.source)))
    fail('the notebook has no code cell that uses kguard');

  // 1. Cell > Run All, as a user would. The failing cell is whichever shows the assert; every
  //    non-empty code cell after it was queued behind it.
  await menu(page, 'celllink', 'run_all_cells');
  log('Cell > Run All clicked');
  const failing = page.locator(cellSel)
    .filter({ has: page.locator('.output_error', { hasText: /device-side assert/i }) }).first();
  await failing.waitFor({ timeout: 150_000 });
  log('the device-side assert is on the page');
  // kguard's notice (display_data under the failing cell) follows the restart and restore.
  await failing.locator('.output_markdown', { hasText: /kguard/i }).first()
    .waitFor({ timeout: 90_000 });
  await waitNoPendingCells(page, 90_000);
  await waitKernelIdle(page, 60_000);
  cells = await cellTexts(page);
  const train = cells.findIndex((c) => c.errors.some((e) => /device-side assert/i.test(e)));
  const queued = cells.map((c, i) => i)
    .filter((i) => i > train && cells[i].code && cells[i].source.trim() !== '');
  if (queued.length === 0) fail(`no code cells after the failing cell #${train} to check`);
  log(`failing cell #${train}; queued cells after it: ${queued.join(', ')}`);
  const t = cells[train];
  const tErr = t.errors.join('\n');
  log(`training cell error output: ${tErr.slice(0, 300).replace(/\n/g, ' | ')}`);
  log(`training cell markdown output: ${t.markdown.join(' | ').slice(0, 400)}`);
  if (!/device-side assert/i.test(tErr))
    fail(`the failing cell does not show the device-side assert; its output: ${t.output}`);
  const notice = t.markdown.join('\n');
  if (!/kguard/i.test(notice) || !/restart/i.test(notice))
    fail(`no kguard restart notice under the failing cell; its output: ${t.output}`);
  const rs = notice.match(/restored\s+step\s+(\d+)/i);
  if (!rs) fail(`the kguard notice does not say which checkpoint step it restored: ${notice}`);
  const restoredStep = Number(rs[1]);
  if (!(restoredStep < EMULATE_STEP))
    fail(`kguard restored step ${restoredStep}, not one before the fault at step ${EMULATE_STEP}`);
  log(`kguard notice shown: restarted, restored step ${restoredStep}`);
  for (const i of queued) {
    const c = cells[i];
    if (!c.errors.some((e) => /KernelRestarted/.test(e)))
      fail(`queued cell #${i} does not show a KernelRestarted error; its output: ${c.output}`);
    if (c.stdout.length > 0)
      fail(`queued cell #${i} ran after the fault: ${c.stdout.join(' ')}`);
    log(`queued cell #${i}: KernelRestarted shown, nothing executed`);
  }
  await screenshot(page, path.join(ARTIFACTS, 'browser-after-fault.png'));
  await noticeShot(page, train, queued[0], path.join(ARTIFACTS, 'browser-notice.png'));

  // 2. The kernel is usable: a new cell below the last one, print(1+1).
  const n = cells.length;
  await selectCell(page, n - 1);
  await menu(page, 'insertlink', 'insert_cell_below');
  await page.locator(cellSel).nth(n).waitFor({ timeout: 10_000 });
  await page.locator(cellSel).nth(n).locator('.CodeMirror').click();
  await page.keyboard.type('print(1+1)');
  await menu(page, 'celllink', 'run_cell');
  const newOut = page.locator(cellSel).nth(n).locator('.output_stream');
  await newOut.first().waitFor({ timeout: 60_000 });
  await page.waitForFunction(
    ([sel, i]) => /\[\d+\]/.test(document.querySelectorAll(sel)[i]
      .querySelector('.input_prompt').textContent), [cellSel, n], { timeout: 60_000 });
  const two = (await newOut.allTextContents()).join('').trim();
  if (two !== '2') fail(`print(1+1) printed ${JSON.stringify(two)}, expected "2"`);
  log('new cell print(1+1) -> 2');

  // 3. Training resumes, as a user would bring it back: Cell > Run All Above on the failing
  //    cell (the fresh kernel has none of the earlier definitions), then Cell > Run All Below
  //    (the failing cell and everything after it, e.g. the cell that prints the RESULT line).
  await selectCell(page, train);
  await menu(page, 'celllink', 'run_all_cells_above');
  await waitNoPendingCells(page, 120_000);
  await selectCell(page, train);
  await menu(page, 'celllink', 'run_all_cells_below');
  // Executing clears the cell's old output at once, so resume text seen now is from this run.
  await page.locator(cellSel).nth(train).locator('.output_stdout', { hasText: /resum/i })
    .first().waitFor({ timeout: 60_000 });
  await waitNoPendingCells(page, 180_000);
  await waitKernelIdle(page, 60_000);
  cells = await cellTexts(page);
  const r = cells[train];
  const rOut = r.stdout.join('\n');
  log(`training re-run output: ${rOut.slice(0, 400).replace(/\n/g, ' | ')}`);
  const m = rOut.match(/resum\w*[^\n]*?step\D{0,3}(\d+)/i);
  if (!m) fail(`the re-run training cell does not say which step it resumed from: ${r.output}`);
  const resumed = Number(m[1]);
  if (resumed !== restoredStep)
    fail(`training resumed from step ${resumed}, but kguard's notice says it restored ${restoredStep}`);
  for (let i = train; i < cells.length; i++) {
    if (cells[i].errors.length)
      fail(`cell #${i} failed on the re-run: ${cells[i].errors.join('\n')}`);
  }
  const resultLine = cells.slice(train).flatMap((c) => c.stdout.join('\n').split('\n'))
    .find((l) => /RESULT/.test(l));
  if (!resultLine) fail('no RESULT line on the page after the re-run');
  log(`training resumed from step ${resumed} and finished: ${resultLine.trim()}`);
  const rf = resultLine.match(/resumed_from=(\w+)/);
  if (rf && rf[1] !== String(restoredStep))
    fail(`the RESULT line says resumed_from=${rf[1]}, kguard restored step ${restoredStep}`);
  return { train, queued, resumed };
}

// ---------------------------------------------------------------------------------------------
// 4. The Run-All race, repeated.

const ASSERT_LINE = '/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_'
  + 'kernel_2d: block: [0,0,0], thread: [4,0,0] Assertion `t >= 0 && t < n_classes` failed.';
const DEVICE_ASSERT = 'CUDA error: device-side assert triggered\\nCUDA kernel errors might be '
  + 'asynchronously reported at some other API call, so the stacktrace below might be '
  + 'incorrect.\\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\\nCompile with '
  + '`TORCH_USE_CUDA_DSA` to enable device-side assertions.\\n';
const RACE_MARKERS = ['race-marker-a', 'race-marker-b', 'race-probe'];

function failingSource(round) {
  // The round in a comment: the same failure twice in a row would stop restarts (kguard's
  // policy), and a user who re-runs a failing notebook edits something first anyway.
  return `# round ${round}\nimport os\nos.write(2, b${JSON.stringify(ASSERT_LINE + '\n')})\n`
    + `raise RuntimeError(${JSON.stringify(DEVICE_ASSERT)})`;
}

function stageRaceNotebook(scratch, spec) {
  const code = (src) => ({ cell_type: 'code', metadata: {}, execution_count: null, outputs: [],
                           source: src });
  const nb = {
    nbformat: 4, nbformat_minor: 5,
    metadata: { kernelspec: { name: RACE_KERNEL, display_name: `${spec.display_name} race`,
                              language: 'python' } },
    cells: [code('x = 1'), code(failingSource(1)),
            code(`open(${JSON.stringify(RACE_MARKERS[0])}, 'a').write('ran\\n')`),
            code(`open(${JSON.stringify(RACE_MARKERS[1])}, 'a').write('ran\\n')`),
            code(`open(${JSON.stringify(RACE_MARKERS[2])}, 'a').write('ran\\n'); print('probe', x)`)],
  };
  fs.writeFileSync(path.join(scratch.work, 'race.ipynb'), JSON.stringify(nb, null, 1));
  return 'race.ipynb';
}

// The race kernelspec: the main one's argv with the stale window ending at the notice and
// restarts neither budgeted nor delayed (the rounds restart many times in a minute).
function installRaceKernelspec(scratch, spec) {
  const argv = [...spec.argv];
  argv.splice(argv.indexOf('--'), 0, '--stale-window', '0', '--max-restarts', '1000',
              '--backoff', '0', '--backoff-max', '0');
  const kdir = path.join(scratch.prefix, 'share', 'jupyter', 'kernels', RACE_KERNEL);
  fs.mkdirSync(kdir, { recursive: true });
  fs.writeFileSync(path.join(kdir, 'kernel.json'),
                   JSON.stringify({ ...spec, argv, display_name: `${spec.display_name} race` }));
}

async function raceRounds(page, server, nbName, scratch) {
  const url = server.url(`/notebooks/${encodeURIComponent(nbName)}?token=${server.token}`);
  await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 30_000 });
  await page.locator(cellSel).first().waitFor({ timeout: 30_000 });
  await waitKernelIdle(page, 60_000);
  for (let round = 1; round <= RACE_ROUNDS; round++) {
    if (round > 1) {
      // The last round's outputs go first, so what is checked below is this round's.
      await page.evaluate(([i, src]) => {
        window.Jupyter.notebook.clear_all_output();
        window.Jupyter.notebook.get_cell(i).set_text(src);
      }, [1, failingSource(round)]);
    }
    await menu(page, 'celllink', 'run_all_cells');
    const failing = page.locator(cellSel).nth(1);
    await failing.locator('.output_error', { hasText: /device-side assert/i }).first()
      .waitFor({ timeout: 90_000 });
    await failing.locator('.output_markdown', { hasText: /kguard/i }).first()
      .waitFor({ timeout: 90_000 });
    await waitNoPendingCells(page, 90_000);
    await waitKernelIdle(page, 60_000);
    const cells = await cellTexts(page);
    for (const i of [2, 3, 4]) {
      if (!cells[i].errors.some((e) => /KernelRestarted/.test(e)))
        fail(`race round ${round}: queued cell #${i} does not show KernelRestarted: `
             + `${cells[i].output.slice(0, 300)}`);
      if (cells[i].stdout.length > 0)
        fail(`race round ${round}: queued cell #${i} ran: ${cells[i].stdout.join(' ')}`);
    }
    const ran = RACE_MARKERS.filter((m) => fs.existsSync(path.join(scratch.work, m)));
    if (ran.length)
      fail(`race round ${round}: queued cells ran in the fresh kernel (${ran.join(', ')} written)`);
    log(`race round ${round}/${RACE_ROUNDS}: failing cell shown, 3 queued cells answered `
        + 'KernelRestarted, none ran');
  }
}

// Cross-check the page against kguard's incident record (state dir), when it says a step.
function checkIncident(scratch, resumed) {
  const dir = path.join(scratch.state, 'incidents');
  const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.json')) : [];
  if (files.length !== 1) fail(`expected exactly one incident record in ${dir}, found ${files.length}`);
  const inc = JSON.parse(fs.readFileSync(path.join(dir, files[0]), 'utf8'));
  const text = JSON.stringify(inc);
  log(`incident ${files[0]}: ${text.slice(0, 300)}`);
  const step = inc.restored_step ?? inc.restore?.step ?? inc.checkpoint?.step;
  if (step !== undefined && Number(step) !== resumed)
    fail(`the page says resumed from step ${resumed}, the incident says ${step}`);
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const kguardBin = checkPrerequisites();
  const chromium = await loadPlaywright();
  const scratch = makeScratch();
  log(`scratch dir ${scratch.root}`);
  const mark = crypto.randomBytes(8).toString('hex');
  let server = null;
  let context = null;
  let page = null;
  let ok = false;
  const consoleLines = [];
  // One cleanup, however many callers (main's finally, the watchdog, a signal) wait for it.
  let cleaning = null;
  const cleanup = () => (cleaning ??= doCleanup());
  const doCleanup = async () => {
    if (page && !ok) {
      try { await screenshot(page, path.join(ARTIFACTS, 'browser-failure.png')); } catch { }
    }
    if (context) { try { await context.close(); } catch { /* already gone */ } }
    if (server) await server.stop();
    const left = await reapMarked(mark);
    if (left.length) {
      console.log(`LEAK: processes still alive after shutdown (killed now):\n` +
                  left.map((p) => `  ${p.pid} ${p.cmd}`).join('\n'));
      ok = false;
    } else {
      log('server, kernels and their children are all gone');
    }
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    if (server) {
      try { fs.copyFileSync(server.logPath, path.join(ARTIFACTS, 'notebook-server.log')); }
      catch { }
      if (!ok) server.dumpLog();
    }
    if (!ok && consoleLines.length)
      console.log(`----- browser console -----\n${consoleLines.slice(-100).join('\n')}`);
    if (process.env.KG_BROWSER_KEEP === '1') log(`kept ${scratch.root}`);
    else fs.rmSync(scratch.root, { recursive: true, force: true });
  };

  // A watchdog below ctest's TIMEOUT: if something hangs, still stop the server and kernels.
  const watchdog = setTimeout(async () => {
    console.log(`FAIL: the test ran past its own budget of ${TOTAL_BUDGET_MS} ms`);
    await cleanup();
    process.exit(1);
  }, TOTAL_BUDGET_MS);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, async () => { console.log(`FAIL: got ${sig}`); await cleanup(); process.exit(1); });
  }

  try {
    const spec = installKernelspec(kguardBin, scratch);
    const src = pickNotebook();
    const { name } = stageNotebook(src, scratch, spec);
    installRaceKernelspec(scratch, spec);
    const raceName = stageRaceNotebook(scratch, spec);
    log(`notebook ${src}`);
    const env = {
      ...process.env,
      JUPYTER_DATA_DIR: scratch.data,
      JUPYTER_CONFIG_DIR: scratch.config,
      JUPYTER_RUNTIME_DIR: scratch.runtime,
      JUPYTER_PATH: path.join(scratch.prefix, 'share', 'jupyter'),
      IPYTHONDIR: scratch.ipython,
      KGUARD_STATE_DIR: scratch.state,
      KGUARD_EMULATE: `cuda-assert:step=${EMULATE_STEP}:once`,
      KGUARD_E2E_MARK: mark,
      PYTHONDONTWRITEBYTECODE: '1',
    };
    delete env.KGUARD_CKPT_DIR;
    delete env.KGUARD_RESUME_DIR;
    delete env.KGUARD_RESUME_STEP;
    server = new Server(scratch, env);
    await server.start();

    context = await chromium.launchPersistentContext(scratch.chrome, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
             '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1280, height: 1000 },
    });
    log(`chromium ${context.browser() ? context.browser().version() : ''} started`);
    page = context.pages()[0] || await context.newPage();
    page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => consoleLines.push(`pageerror: ${e.message}`));

    const res = await scenario(page, server, name);
    checkIncident(scratch, res.resumed);
    await screenshot(page, path.join(ARTIFACTS, 'browser.png'));
    // A page of its own: leaving the first (edited) notebook would ask to confirm.
    page = await context.newPage();
    page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
    await raceRounds(page, server, raceName, scratch);
    ok = true;
  } catch (e) {
    console.log(`FAIL: ${e instanceof Fail ? e.message : (e.stack || e)}`);
  } finally {
    clearTimeout(watchdog);
    await cleanup();
  }
  console.log(ok ? 'PASS: kguard notebook end to end in headless Chromium'
                 : 'FAIL: see above');
  process.exit(ok ? 0 : 1);
}

main().catch((e) => { console.log(`FAIL: ${e instanceof Fail ? e.message : e.stack}`); process.exit(1); });
