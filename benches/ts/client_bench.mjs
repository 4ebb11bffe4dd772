#!/usr/bin/env node
// Benchmark: drives MCP stdio servers through the official TypeScript SDK client (`Client` +
// `StdioClientTransport`, the client stack of Claude Code, Claude Desktop and VS Code) and, as the
// baseline measured in the same run, through raw newline-delimited JSON-RPC from the same Node
// process (no SDK). Prints one JSON object on stdout and markdown tables on stderr.
//
//   node client_bench.mjs --server "CMD ARGS" [--kind toolbelt|filesystem|auto] [--name LABEL]
//                         [--details] [--server "CMD ARGS" --kind ... --name ... --details]...
//                         [--runs N] [--calls M] [--warmup W] [--big-runs K] [--big-lines L]
//                         [--only cold,warm,big] [--no-raw]
//
// `--server` may be repeated; `--kind`/`--name`/`--details` apply to the `--server` before them
// (`--details`: toolbelt calls ask for the whole record, `details: true`, not the lean view; the
// same binary twice, with and without it, is the lean view's A/B). The first
// server is the numerator of a ratio to each other one (`ratios[]`), and every other `toolbelt`
// server is the numerator of one to each `filesystem` peer. The command is split on
// whitespace (no shell quoting); `{root}` is replaced by the bench workspace (else the workspace is
// appended) and `{state}` by a fresh state dir, both under one temp dir removed at exit.
// See README.md beside this file for the JSON shape.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtempSync, mkdirSync, writeFileSync, appendFileSync, rmSync, realpathSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, parse as parsePath } from 'node:path';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);

/** The installed SDK's version (its package.json is not in the package's exports). */
function sdkVersion() {
  let dir = dirname(require.resolve('@modelcontextprotocol/sdk/client/index.js'));
  while (dir !== parsePath(dir).root) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      if (pkg.name === '@modelcontextprotocol/sdk') return pkg.version;
    } catch {}
    dir = dirname(dir);
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Options

function parseArgs(argv) {
  const o = {
    servers: [],
    runs: 20,
    calls: 500,
    warmup: 100,
    bigRuns: 3,
    bigLines: 100_000,
    only: null,
    raw: true,
  };
  const num = (a, v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) die(`${a} takes a whole number, got ${JSON.stringify(v)}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) die(`${a} needs a value`);
      return argv[++i];
    };
    const last = () => o.servers.at(-1) ?? die(`${a} must follow a --server`);
    switch (a) {
      case '--server':
        o.servers.push({ cmd: val(), kind: 'auto', name: null });
        break;
      case '--kind': {
        const k = val();
        if (!['toolbelt', 'filesystem', 'auto'].includes(k)) die(`--kind is toolbelt, filesystem or auto, got ${k}`);
        last().kind = k;
        break;
      }
      case '--name':
        last().name = val();
        break;
      case '--details':
        last().details = true;
        break;
      case '--runs':
        o.runs = num(a, val());
        break;
      case '--calls':
        o.calls = num(a, val());
        break;
      case '--warmup':
        o.warmup = num(a, val());
        break;
      case '--big-runs':
        o.bigRuns = num(a, val());
        break;
      case '--big-lines':
        o.bigLines = num(a, val());
        break;
      case '--only':
        o.only = val().split(',').map((s) => s.trim()).filter(Boolean);
        break;
      case '--no-raw':
        o.raw = false;
        break;
      case '-h':
      case '--help':
        process.stderr.write(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1, 17).join('\n') + '\n');
        process.exit(0);
        break;
      default:
        die(`unknown argument ${JSON.stringify(a)} (see the header of client_bench.mjs)`);
    }
  }
  if (o.servers.length === 0) die('give at least one --server "CMD ARGS"');
  if (o.runs < 1 || o.calls < 1) die('--runs and --calls must be at least 1');
  return o;
}

function die(msg) {
  process.stderr.write(`client_bench: ${msg}\n`);
  process.exit(2);
}

const log = (s = '') => process.stderr.write(s + '\n');

// ---------------------------------------------------------------------------------------------
// Statistics (all in milliseconds)

function stats(v) {
  const s = [...v].sort((a, b) => a - b);
  const at = (p) => s[Math.round((s.length - 1) * p)];
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return { n: s.length, median_ms: r4(at(0.5)), p90_ms: r4(at(0.9)), mean_ms: r4(mean), min_ms: r4(s[0]), max_ms: r4(s.at(-1)) };
}
const r4 = (x) => Math.round(x * 1e4) / 1e4;
const r2 = (x) => (x == null || !Number.isFinite(x) ? null : Math.round(x * 100) / 100);
const bytes = (obj) => Buffer.byteLength(JSON.stringify(obj));

// ---------------------------------------------------------------------------------------------
// Workspace: the same small files as benches/stdio.rs, plus an ~8 MB text file of `bigLines` lines.

const SMALL_LINE = '0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKL\n'; // 51 bytes

function createWorkspace(bigLines) {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'toolbelt-ts-bench-')));
  const root = join(base, 'root');
  mkdirSync(join(root, 'smalldir', 'sub'), { recursive: true });
  writeFileSync(join(root, 'small.txt'), SMALL_LINE.repeat(20)); // 1020 B
  for (let i = 0; i < 10; i++) writeFileSync(join(root, 'smalldir', `file${i}.txt`), SMALL_LINE);
  writeFileSync(join(root, 'smalldir', 'sub', 'nested.txt'), SMALL_LINE);
  // 80-byte lines (79 chars + \n): 100k lines = 8,000,000 bytes. Varied text so nothing compresses
  // into a repeat, plain ASCII so byte and character counts agree.
  const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo', 'lima'];
  const parts = [];
  for (let i = 0; i < bigLines; i++) {
    let l = `${String(i + 1).padStart(7, '0')} `;
    let k = i;
    while (l.length < 79) {
      l += words[k % words.length] + ' ';
      k = Math.floor(k / 3) + 7 * (l.length % 5) + 1;
    }
    parts.push(l.slice(0, 79));
  }
  const big = parts.join('\n') + '\n';
  writeFileSync(join(root, 'big.txt'), big);
  return { base, root, bigBytes: Buffer.byteLength(big), bigLines, bigParts: parts };
}

function argvFor(cmd, ws, idx) {
  const state = join(ws.base, `state-${idx}`);
  mkdirSync(state, { recursive: true });
  const argv = cmd.split(/\s+/).filter(Boolean).map((a) => a.replaceAll('{root}', ws.root).replaceAll('{state}', state));
  if (!cmd.includes('{root}')) argv.push(ws.root);
  return argv;
}

// ---------------------------------------------------------------------------------------------
// Tool calls per server kind

function detectKind(kind, toolNames) {
  if (kind !== 'auto') return kind;
  if (toolNames.includes('file_operations')) return 'toolbelt';
  if (toolNames.includes('list_directory')) return 'filesystem';
  throw new Error(`cannot tell the server kind from its tools: ${toolNames.join(', ')}`);
}

/** {read, list, bigPage(offset)} tool-call params for a server kind. */
function requests(kind, toolNames, ws, details = false) {
  if (kind === 'toolbelt') {
    if (!toolNames.includes('file_operations')) throw new Error(`--kind toolbelt but no file_operations in ${toolNames}`);
    const fo = (args) => ({ name: 'file_operations', arguments: details ? { ...args, details: true } : args });
    return {
      read: fo({ operation: 'read_file', path: 'small.txt' }),
      list: fo({ operation: 'list_dir', path: 'smalldir' }),
      big: (offset) => fo(offset ? { operation: 'read_file', path: 'big.txt', offset } : { operation: 'read_file', path: 'big.txt' }),
    };
  }
  const read = toolNames.includes('read_text_file') ? 'read_text_file' : 'read_file';
  if (!toolNames.includes(read) || !toolNames.includes('list_directory')) {
    throw new Error(`--kind filesystem needs read_text_file/read_file and list_directory, got ${toolNames}`);
  }
  return {
    read: { name: read, arguments: { path: join(ws.root, 'small.txt') } },
    list: { name: 'list_directory', arguments: { path: join(ws.root, 'smalldir') } },
    big: () => ({ name: read, arguments: { path: join(ws.root, 'big.txt') } }),
  };
}

function checkSmall(label, result) {
  const text = result?.content?.[0]?.text ?? '';
  if (result?.isError || !(text.includes('0123456789') || text.includes('file0'))) {
    throw new Error(`${label}: unexpected result ${JSON.stringify(result).slice(0, 500)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// TS SDK client

/** A connected SDK client with timings of its connect and the bytes of every incoming message. */
async function sdkConnect(argv) {
  const t0 = performance.now();
  const transport = new StdioClientTransport({ command: argv[0], args: argv.slice(1), stderr: 'ignore' });
  const client = new Client({ name: 'toolbelt-ts-bench', version: '0' });
  const constructMs = performance.now() - t0;
  // Time the spawn (transport.start resolves on the child's `spawn` event) and the validator
  // compilation the SDK does inside listTools (cacheToolMetadata compiles every outputSchema).
  let tSpawned = null;
  const start = transport.start.bind(transport);
  transport.start = async () => {
    await start();
    tSpawned = performance.now();
  };
  let compileMs = 0;
  const cache = client.cacheToolMetadata.bind(client);
  client.cacheToolMetadata = (tools) => {
    const t = performance.now();
    cache(tools);
    compileMs += performance.now() - t;
  };
  await client.connect(transport);
  const t1 = performance.now();
  // Count the JSON bytes of each message as the SDK received it (re-serialized: same as the wire
  // for compact JSON, which every server measured here prints).
  // Off during timed loops (re-serializing would add to what is timed).
  const meter = { on: true, last: 0 };
  const onmessage = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    if (meter.on) meter.last = bytes(msg);
    onmessage(msg, extra);
  };
  return {
    client,
    transport,
    meter,
    constructMs,
    spawnMs: tSpawned - t0,
    connectMs: t1 - t0,
    t0,
    compile: () => {
      const c = compileMs;
      compileMs = 0;
      return c;
    },
  };
}

async function sdkClose(c) {
  await c.client.close().catch(() => {});
}

/** Median ms to compile one outputSchema the way the SDK does on every listTools (fresh AJV per Client). */
function compileCost(schema) {
  const v = [];
  for (let i = 0; i < 25; i++) {
    const validator = new AjvJsonSchemaValidator();
    const t = performance.now();
    validator.getValidator(schema);
    if (i >= 5) v.push(performance.now() - t);
  }
  return stats(v).median_ms;
}

// ---------------------------------------------------------------------------------------------
// Raw newline-delimited JSON-RPC client (the baseline: same pipes, no SDK)

class RawPeer {
  constructor(argv) {
    this.child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'ignore'], env: getDefaultEnvironment() });
    this.nextId = 1;
    this.pending = new Map();
    this.lastBytes = 0;
    this.spawned = new Promise((res, rej) => {
      this.child.once('spawn', res);
      this.child.once('error', rej);
    });
    const rl = createInterface({ input: this.child.stdout, crlfDelay: Infinity });
    rl.on('line', (line) => {
      const msg = JSON.parse(line);
      if (msg.method !== undefined) {
        if (msg.id !== undefined) this.send({ jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: 'unsupported' } });
        return;
      }
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      this.lastBytes = Buffer.byteLength(line);
      if (msg.error) p.rej(new Error(`${p.method} failed: ${JSON.stringify(msg.error)}`));
      else p.res(msg.result);
    });
    this.closed = new Promise((res) => this.child.once('close', res));
    this.child.once('close', () => {
      for (const p of this.pending.values()) p.rej(new Error('server exited'));
      this.pending.clear();
    });
  }
  send(msg) {
    this.child.stdin.write(JSON.stringify(msg) + '\n');
  }
  call(method, params) {
    const id = this.nextId++;
    return new Promise((res, rej) => {
      this.pending.set(id, { res, rej, method });
      this.send({ jsonrpc: '2.0', id, method, params });
    });
  }
  async handshake() {
    await this.spawned;
    await this.call('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'toolbelt-ts-bench-raw', version: '0' } });
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const t = performance.now();
    const list = await this.call('tools/list', {});
    this.listMs = performance.now() - t;
    return list;
  }
  async tool(params) {
    const r = await this.call('tools/call', params);
    if (r.isError) throw new Error(`${params.name} returned isError: ${JSON.stringify(r).slice(0, 500)}`);
    return r;
  }
  async close() {
    this.child.stdin.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 2000);
    await this.closed;
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// Section (a): cold start, interleaved across servers and with a `/bin/true` spawn floor.

function spawnTrue() {
  return new Promise((res, rej) => {
    const c = spawn('/bin/true', [], { stdio: 'ignore' });
    c.once('error', rej);
    c.once('close', res);
  });
}

async function coldStart(servers, o) {
  const floor = [];
  const per = servers.map(() => ({ total: [], construct: [], spawn: [], connect: [], list: [], compile: [], raw: [], rawList: [], first: null }));
  for (let run = 0; run < o.runs; run++) {
    let t = performance.now();
    await spawnTrue();
    floor.push(performance.now() - t);
    for (const [i, s] of servers.entries()) {
      const p = per[i];
      const c = await sdkConnect(s.argv);
      const tl = performance.now();
      const list = await c.client.listTools();
      const t2 = performance.now();
      const compile = c.compile();
      const m = { total: t2 - c.t0, construct: c.constructMs, spawn: c.spawnMs, connect: c.connectMs, list: t2 - tl, compile };
      for (const k of Object.keys(m)) p[k].push(m[k]);
      if (run === 0) p.first = Object.fromEntries(Object.entries(m).map(([k, v]) => [`${k}_ms`, r4(v)]));
      if (list.tools.length === 0) throw new Error(`${s.name}: tools/list is empty`);
      await sdkClose(c);
      if (o.raw) {
        t = performance.now();
        const rp = new RawPeer(s.argv);
        await rp.handshake();
        p.raw.push(performance.now() - t);
        p.rawList.push(rp.listMs);
        await rp.close();
      }
    }
  }
  const out = { runs: o.runs, spawn_true: stats(floor), servers: [] };
  for (const [i, s] of servers.entries()) {
    const p = per[i];
    out.servers.push({
      total: stats(p.total),
      client_construct: stats(p.construct),
      spawn: stats(p.spawn),
      connect: stats(p.connect),
      list_tools: stats(p.list),
      compile_output_validators: stats(p.compile),
      first_run: p.first,
      raw_jsonrpc_total: o.raw ? stats(p.raw) : null,
      raw_jsonrpc_tools_list: o.raw ? stats(p.rawList) : null,
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Section (b): warm per-call latency through the SDK (and raw, same server command, own process).

/** Rounds the warm calls are split into, the servers taking turns (see `interleaved`). */
const WARM_ROUNDS = 10;

/**
 * Times `calls` calls of each of `ones` (one function per server), after `warmup` untimed calls
 * each. The timed calls run in rounds, the servers taking turns, the first of each round moving
 * on by one: on a shared machine whose speed drifts, every server is measured across the same
 * minutes, which a whole run of one server then the other is not. Returns one `stats` per server.
 */
async function interleaved(warmup, calls, ones) {
  for (const one of ones) for (let i = 0; i < warmup; i++) await one();
  const samples = ones.map(() => []);
  const rounds = Math.min(WARM_ROUNDS, calls);
  for (let round = 0; round < rounds; round++) {
    const inRound = Math.floor(calls / rounds) + (round < calls % rounds ? 1 : 0);
    for (let turn = 0; turn < ones.length; turn++) {
      const k = (round + turn) % ones.length;
      for (let i = 0; i < inRound; i++) {
        const t = performance.now();
        await ones[k]();
        samples[k].push(performance.now() - t);
      }
    }
  }
  return samples.map(stats);
}

/** Per-call client-side cost of one result, measured offline: JSON.parse, the SDK's zod parse and the AJV output validation. */
function clientCost(client, name, result, line) {
  const n = 200;
  const time = (f) => {
    for (let i = 0; i < 20; i++) f();
    const t = performance.now();
    for (let i = 0; i < n; i++) f();
    return r4((performance.now() - t) / n);
  };
  const validator = client.getToolOutputValidator(name);
  return {
    json_parse_ms: time(() => JSON.parse(line)),
    zod_call_tool_result_ms: time(() => CallToolResultSchema.safeParse(result)),
    ajv_output_validation_ms: validator && result.structuredContent ? time(() => validator(result.structuredContent)) : null,
  };
}

/** The warm section for every server at once: connected together, timed in turns. */
async function warm(servers, ws, o) {
  const conns = [];
  for (const s of servers) {
    const c = await sdkConnect(s.argv);
    const list = await c.client.listTools();
    const names = list.tools.map((t) => t.name);
    s.kind = detectKind(s.kind, names);
    conns.push({ c, argv: s.argv, req: requests(s.kind, names, ws, s.details), out: {} });
  }
  const paramsOf = (conn, key) => (key === 'read_file' ? conn.req.read : conn.req.list);
  for (const key of ['read_file', 'list_dir']) {
    for (const conn of conns) {
      const params = paramsOf(conn, key);
      conn.c.meter.on = true;
      const first = await conn.c.client.callTool(params);
      checkSmall(key, first);
      conn.c.meter.on = false;
      conn.out[key] = {
        params,
        response_bytes: conn.c.meter.last,
        structured_content: first.structuredContent !== undefined,
        sdk_client_cost: clientCost(conn.c.client, params.name, first, JSON.stringify({ jsonrpc: '2.0', id: 1, result: first })),
      };
    }
    const sdk = await interleaved(o.warmup, o.calls, conns.map((conn) => () => conn.c.client.callTool(paramsOf(conn, key))));
    conns.forEach((conn, i) => (conn.out[key].sdk = sdk[i]));
  }
  for (const conn of conns) await sdkClose(conn.c);
  if (o.raw) {
    const peers = conns.map((conn) => new RawPeer(conn.argv));
    for (const rp of peers) await rp.handshake();
    for (const key of ['read_file', 'list_dir']) {
      const raw = await interleaved(o.warmup, o.calls, peers.map((rp, i) => () => rp.tool(paramsOf(conns[i], key))));
      conns.forEach((conn, i) => (conn.out[key].raw_jsonrpc = raw[i]));
    }
    for (const rp of peers) await rp.close();
  }
  return conns.map((conn) => conn.out);
}

// ---------------------------------------------------------------------------------------------
// Section (c): reading the big file completely at the server's default budget.

/** How the big file is when a toolbelt server pages through it. */
const BIG_MODES = {
  // Unchanged for 3 s or more.
  settled: 'settled: unchanged for 3 s',
  // Written again just before the first page.
  fresh: 'fresh: written just before the first page',
  // Half written before the first page, 200 lines appended after every page until whole.
  growing: 'growing: half written, 200 lines appended after every page',
};
const GROW_LINES = 200;

/** Sets the big file up for `mode` (`settled` waits until it has been unchanged for 3 s). */
async function prepareBig(ws, mode) {
  const path = join(ws.root, 'big.txt');
  if (mode === 'fresh') writeFileSync(path, ws.bigParts.join('\n') + '\n');
  if (mode === 'growing') writeFileSync(path, ws.bigParts.slice(0, ws.bigLines / 2).map((l) => l + '\n').join(''));
  if (mode === 'settled') {
    writeFileSync(path, ws.bigParts.join('\n') + '\n');
    await new Promise((resolve) => setTimeout(resolve, 3000));
  }
  let written = mode === 'growing' ? ws.bigLines / 2 : ws.bigLines;
  // Appends the next lines, if any are left; false once the file is whole.
  return () => {
    if (mode !== 'growing' || written >= ws.bigLines) return false;
    const upTo = Math.min(ws.bigLines, written + GROW_LINES);
    appendFileSync(path, ws.bigParts.slice(written, upTo).map((l) => l + '\n').join(''));
    written = upTo;
    return true;
  };
}

async function readBig(call, req, kind, ws, meter, grow = () => false) {
  const t0 = performance.now();
  let calls = 0;
  let received = 0;
  const perCall = [];
  if (kind === 'toolbelt') {
    let offset = null;
    let last = null;
    let growing = 0;
    for (;;) {
      const t = performance.now();
      const r = await call(req.big(offset));
      perCall.push(performance.now() - t);
      calls++;
      received += meter ? meter() : 0;
      if (r.isError) throw new Error(`big read_file page ${calls} isError: ${JSON.stringify(r).slice(0, 500)}`);
      last = r.structuredContent;
      // The writer's appends are not the reader's time.
      const g = performance.now();
      const grew = grow();
      growing += performance.now() - g;
      const next = last?.next_offset ?? (grew ? last.end_line + 1 : null);
      if (next == null) break;
      if (offset != null && next <= offset) throw new Error(`next_offset did not advance: ${offset} -> ${next}`);
      offset = next;
    }
    const total = performance.now() - t0 - growing;
    if (last.end_line !== ws.bigLines || last.total_lines !== ws.bigLines) {
      throw new Error(`paging stopped at line ${last.end_line} of ${last.total_lines}, file has ${ws.bigLines}`);
    }
    return { total, calls, received, perCall };
  }
  const r = await call(req.big());
  const total = performance.now() - t0;
  calls = 1;
  received = meter ? meter() : 0;
  perCall.push(total);
  const text = r.content?.map((x) => x.text ?? '').join('') ?? '';
  if (r.isError || text.length < ws.bigBytes) {
    throw new Error(`single read returned ${text.length} chars of ${ws.bigBytes}: ${JSON.stringify(r).slice(0, 300)}`);
  }
  return { total, calls, received, perCall };
}

function bigSummary(runs) {
  if (runs.length === 0) return null;
  const totals = runs.map((r) => r.total);
  const all = runs.flatMap((r) => r.perCall);
  const first = runs[0];
  return {
    total: stats(totals),
    calls: first.calls,
    received_bytes: first.received || null,
    per_call: stats(all),
    // First and last page of the first run: a rising per-page time means each page re-scans from the top.
    first_call_ms: r4(first.perCall[0]),
    last_call_ms: r4(first.perCall.at(-1)),
  };
}

async function big(s, ws, o) {
  const c = await sdkConnect(s.argv);
  const names = (await c.client.listTools()).tools.map((t) => t.name);
  const req = requests(s.kind, names, ws, s.details);
  c.meter.on = false;
  const sdkRuns = [];
  const modes = {};
  let error = null;
  const call = (p) => c.client.callTool(p, undefined, { timeout: 600_000 });
  try {
    await prepareBig(ws, 'settled');
    // One pass not timed, for every server: the first one measured otherwise paid for the
    // client's own warm-up (Node compiling the paging loop and the SDK's parsing), which put
    // the same build 1.5x slower when it ran first than when it ran second.
    await readBig(call, req, s.kind, ws, null);
    for (let i = 0; i < o.bigRuns; i++) sdkRuns.push(await readBig(call, req, s.kind, ws, null));
    if (s.kind === 'toolbelt') {
      // The same file just written, and growing while it is read (a build log, a test's output).
      for (const mode of ['fresh', 'growing']) {
        const runs = [];
        for (let i = 0; i < o.bigRuns; i++) runs.push(await readBig(call, req, s.kind, ws, null, await prepareBig(ws, mode)));
        modes[mode] = { method: BIG_MODES[mode], sdk: bigSummary(runs) };
      }
      await prepareBig(ws, 'settled');
    }
  } catch (e) {
    error = String(e?.message ?? e);
  }
  await sdkClose(c);
  const out = {
    file_bytes: ws.bigBytes,
    file_lines: ws.bigLines,
    method: s.kind === 'toolbelt' ? 'read_file pages: offset = previous next_offset until none' : `${req.big().name}: one call, whole file`,
    runs: o.bigRuns,
    sdk: bigSummary(sdkRuns),
    sdk_error: error,
    modes,
  };
  if (o.raw) {
    const rp = new RawPeer(s.argv);
    await rp.handshake();
    const rawRuns = [];
    out.raw_jsonrpc_error = null;
    try {
      for (let i = 0; i < o.bigRuns; i++) rawRuns.push(await readBig((p) => rp.call('tools/call', p), req, s.kind, ws, () => rp.lastBytes));
    } catch (e) {
      out.raw_jsonrpc_error = String(e?.message ?? e);
    }
    await rp.close();
    out.raw_jsonrpc = bigSummary(rawRuns);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Report

function ratios(servers, result) {
  const div = (x, y) => (x == null || y == null || y === 0 ? null : r2(x / y));
  // The first server against each other one, and every other toolbelt build against each
  // filesystem peer (a `release` and a `dist` build against one peer, in one run).
  const [first, ...others] = result.servers;
  const pairs = others.map((b) => [first, b]);
  for (const a of others.filter((s) => s.kind === 'toolbelt')) {
    for (const b of result.servers.filter((s) => s.kind === 'filesystem')) pairs.push([a, b]);
  }
  return pairs.map(([a, b]) => {
    const r = {
      numerator: a.name,
      denominator: b.name,
      cold_total_median: div(a.cold?.total.median_ms, b.cold?.total.median_ms),
      cold_connect_median: div(a.cold?.connect.median_ms, b.cold?.connect.median_ms),
      cold_list_tools_median: div(a.cold?.list_tools.median_ms, b.cold?.list_tools.median_ms),
      read_file_median: div(a.warm?.read_file.sdk.median_ms, b.warm?.read_file.sdk.median_ms),
      read_file_mean: div(a.warm?.read_file.sdk.mean_ms, b.warm?.read_file.sdk.mean_ms),
      list_dir_median: div(a.warm?.list_dir.sdk.median_ms, b.warm?.list_dir.sdk.median_ms),
      list_dir_mean: div(a.warm?.list_dir.sdk.mean_ms, b.warm?.list_dir.sdk.mean_ms),
      big_read_total_median: div(a.big?.sdk?.total.median_ms, b.big?.sdk?.total.median_ms),
      big_fresh_total_median: div(a.big?.modes?.fresh?.sdk?.total.median_ms, b.big?.sdk?.total.median_ms),
      big_growing_total_median: div(a.big?.modes?.growing?.sdk?.total.median_ms, b.big?.sdk?.total.median_ms),
      tools_list_bytes: div(a.tools_list_bytes, b.tools_list_bytes),
    };
    // The issue's targets, for a toolbelt-mcp build against a filesystem peer.
    if (a.kind === 'toolbelt' && b.kind === 'filesystem') {
      const le = (x, lim) => (x == null ? null : x <= lim);
      r.targets = {
        cold_at_or_below: le(r.cold_total_median, 1.0),
        read_file_at_or_below: le(r.read_file_median, 1.0),
        list_dir_at_or_below: le(r.list_dir_median, 1.0),
        big_read_within_2x: le(r.big_read_total_median, 2.0),
        big_fresh_within_2x: le(r.big_fresh_total_median, 2.0),
        big_growing_within_2x: le(r.big_growing_total_median, 2.0),
      };
    }
    return r;
  });
}

function f(ms) {
  if (ms == null) return '–';
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  if (ms >= 1) return `${ms.toFixed(2)} ms`;
  return `${(ms * 1000).toFixed(ms >= 0.01 ? 0 : 1)} µs`;
}
const x = (a, b) => (a == null || b == null || b === 0 ? '–' : `${(a / b).toFixed(2)}×`);

function printSummary(res) {
  const S = res.servers;
  log(`# MCP servers through the TypeScript SDK client (@modelcontextprotocol/sdk ${res.sdk_version}, node ${res.node_version})\n`);
  for (const s of S) log(`- ${s.name}: \`${s.argv.join(' ')}\` (kind ${s.kind}; tools/list ${s.tools_list_bytes} B, ${s.tools.length} tools)`);
  log('\n## tools/list: what the SDK compiles on every listTools (one AJV validator per outputSchema)\n');
  log('| process | tools | tools/list bytes | with outputSchema | outputSchema bytes | compile, sum of per-tool medians |');
  log('|---|---:|---:|---:|---:|---:|');
  for (const s of S) {
    const os = s.tools.filter((t) => t.output_schema_bytes > 0);
    const sum = (k) => os.reduce((a, t) => a + t[k], 0);
    log(`| ${s.name} | ${s.tools.length} | ${s.tools_list_bytes} B | ${os.length} | ${sum('output_schema_bytes')} B | ${f(sum('output_schema_compile_ms'))} |`);
  }
  if (res.sections.includes('cold')) {
    const c = res.cold;
    log(`\n## Cold start: spawn → connect (initialize) → listTools, ${c.runs} runs\n`);
    log('| process | median | p90 | spawn | connect | listTools | of which output-schema compile | first run | raw JSON-RPC (no SDK) median | of which tools/list | SDK / raw |');
    log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    log(`| \`/bin/true\` spawn+wait (baseline) | ${f(c.spawn_true.median_ms)} | ${f(c.spawn_true.p90_ms)} | | | | | | | | |`);
    for (const s of S) {
      const k = s.cold;
      log(
        `| ${s.name} | ${f(k.total.median_ms)} | ${f(k.total.p90_ms)} | ${f(k.spawn.median_ms)} | ${f(k.connect.median_ms)} | ${f(k.list_tools.median_ms)} | ${f(k.compile_output_validators.median_ms)} | ${f(k.first_run.total_ms)} | ${f(k.raw_jsonrpc_total?.median_ms)} | ${f(k.raw_jsonrpc_tools_list?.median_ms)} | ${x(k.total.median_ms, k.raw_jsonrpc_total?.median_ms)} |`,
      );
    }
  }
  if (res.sections.includes('warm')) {
    log(`\n## Warm calls through the SDK, ${res.params.calls} calls after ${res.params.warmup} warm-up\n`);
    log('| call | process | median | mean | p90 | response | raw JSON-RPC median | SDK / raw | SDK parse: JSON / zod / AJV |');
    log('|---|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const key of ['read_file', 'list_dir']) {
      for (const s of S) {
        const w = s.warm[key];
        const cc = w.sdk_client_cost;
        log(
          `| ${key === 'read_file' ? 'read_file 1 KB' : 'list_dir small dir'} | ${s.name} | ${f(w.sdk.median_ms)} | ${f(w.sdk.mean_ms)} | ${f(w.sdk.p90_ms)} | ${w.response_bytes} B | ${f(w.raw_jsonrpc?.median_ms)} | ${x(w.sdk.median_ms, w.raw_jsonrpc?.median_ms)} | ${f(cc.json_parse_ms)} / ${f(cc.zod_call_tool_result_ms)} / ${f(cc.ajv_output_validation_ms)} |`,
        );
      }
    }
  }
  if (res.sections.includes('big')) {
    const b0 = S[0].big;
    log(`\n## Reading a ${(b0.file_bytes / 1e6).toFixed(1)} MB, ${b0.file_lines}-line file completely at the default budget, median of ${res.params.big_runs}\n`);
    log('| process | method | SDK total | calls | bytes received (raw) | per call median | first / last call | raw JSON-RPC total | SDK / raw |');
    log('|---|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const s of S) {
      const b = s.big;
      const k = b.sdk;
      log(
        `| ${s.name} | ${b.method}${b.modes?.fresh ? ` (${BIG_MODES.settled})` : ''} | ${k ? f(k.total.median_ms) : `**error:** ${b.sdk_error}`} | ${k?.calls ?? '–'} | ${b.raw_jsonrpc?.received_bytes ?? '–'} | ${f(k?.per_call.median_ms)} | ${f(k?.first_call_ms)} / ${f(k?.last_call_ms)} | ${f(b.raw_jsonrpc?.total.median_ms)} | ${x(k?.total.median_ms, b.raw_jsonrpc?.total.median_ms)} |`,
      );
      for (const m of Object.values(b.modes ?? {})) {
        const k = m.sdk;
        log(`| ${s.name} | ${m.method} | ${f(k?.total.median_ms)} | ${k?.calls ?? '–'} | | ${f(k?.per_call.median_ms)} | ${f(k?.first_call_ms)} / ${f(k?.last_call_ms)} | | |`);
      }
    }
  }
  for (const r of res.ratios) {
    log(`\n## ${r.numerator} / ${r.denominator} (same run)\n`);
    log('| measure | ratio | issue target (set against rust-mcp-filesystem) |');
    log('|---|---:|---|');
    const t = r.targets ?? {};
    const v = (b) => (b == null ? '' : b ? 'met' : '**missed**');
    log(`| cold start (connect + listTools) median | ${r.cold_total_median ?? '–'}× | ≤ 1.0× ${v(t.cold_at_or_below)} |`);
    log(`| read_file 1 KB median | ${r.read_file_median ?? '–'}× | ≤ 1.0× ${v(t.read_file_at_or_below)} |`);
    log(`| list_dir median | ${r.list_dir_median ?? '–'}× | ≤ 1.0× ${v(t.list_dir_at_or_below)} |`);
    log(`| big file read completely, total (settled) | ${r.big_read_total_median ?? '–'}× | ≤ 2.0× ${v(t.big_read_within_2x)} |`);
    log(`| the same, written just before | ${r.big_fresh_total_median ?? '–'}× | ≤ 2.0× ${v(t.big_fresh_within_2x)} |`);
    log(`| the same, growing between pages | ${r.big_growing_total_median ?? '–'}× | ≤ 2.0× ${v(t.big_growing_within_2x)} |`);
    log(`| tools/list bytes | ${r.tools_list_bytes ?? '–'}× | |`);
  }
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const run = (sec) => !o.only || o.only.includes(sec);
  const ws = createWorkspace(o.bigLines);
  const cleanup = () => rmSync(ws.base, { recursive: true, force: true });
  process.on('exit', cleanup);
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));
  const servers = o.servers.map((s, i) => ({ ...s, argv: argvFor(s.cmd, ws, i), name: s.name ?? s.cmd }));

  // One connect first: tool names (for --kind auto), tools/list size, and a check that each server answers.
  for (const s of servers) {
    const c = await sdkConnect(s.argv);
    const list = await c.client.listTools();
    s.toolsListBytes = c.meter.last;
    s.tools = list.tools.map((t) => ({
      name: t.name,
      bytes: bytes(t),
      output_schema_bytes: t.outputSchema ? bytes(t.outputSchema) : 0,
      output_schema_compile_ms: t.outputSchema ? compileCost(t.outputSchema) : 0,
    }));
    s.kind = detectKind(s.kind, list.tools.map((t) => t.name));
    s.serverInfo = c.client.getServerVersion();
    await sdkClose(c);
  }
  const res = {
    sdk_version: sdkVersion(),
    node_version: process.version,
    sections: [],
    params: { runs: o.runs, calls: o.calls, warmup: o.warmup, big_runs: o.bigRuns, big_lines: o.bigLines, big_bytes: ws.bigBytes, raw_baseline: o.raw },
    servers: servers.map((s) => ({ name: s.name, kind: s.kind, argv: s.argv, server_info: s.serverInfo, tools_list_bytes: s.toolsListBytes, tools: s.tools })),
  };
  if (run('cold')) {
    log('cold start…');
    const c = await coldStart(servers, o);
    res.sections.push('cold');
    res.cold = { runs: c.runs, spawn_true: c.spawn_true };
    c.servers.forEach((k, i) => (res.servers[i].cold = k));
  }
  if (run('warm')) {
    res.sections.push('warm');
    log(`warm calls: ${servers.map((s) => s.name).join(', ')}, in turns…`);
    const all = await warm(servers, ws, o);
    all.forEach((out, i) => (res.servers[i].warm = out));
  }
  if (run('big')) {
    res.sections.push('big');
    for (const [i, s] of servers.entries()) {
      log(`big file: ${s.name}…`);
      res.servers[i].big = await big(s, ws, o);
    }
  }
  res.ratios = ratios(servers, res);
  printSummary(res);
  process.stdout.write(JSON.stringify(res, null, 1) + '\n');
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`client_bench: ${e?.stack ?? e}\n`);
    process.exit(1);
  },
);
