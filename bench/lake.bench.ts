// The demo's steps on a DuckDB file and on a lake, side by side in one run: the lake's catalog a PostgreSQL on
// loopback, then behind a proxy that delays every request, as a catalog on another host would; and a new lake's first
// open. Each figure is printed beside its goal (issue #36), then the statements that asked the catalog most. Needs
// PostgreSQL and `npm run lake:install`.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pgClient from 'pg';
import { runDemo } from '../cli/commands/demo.ts';
import { postgresBin, startLocalPostgres } from '../lib/local-postgres.ts';
import { openStore, statementWatch } from '../store/db.ts';
import { DEFAULT_LAKE_EXTENSIONS_DIR, STATS_INDEX } from '../store/lake.ts';
import { buildCli, runCli } from './cli-run.ts';

const LATENCY_MS = Number(process.env.BENCH_LATENCY_MS ?? 5);
/** Runs of each side on loopback, file and lake taking turns: each figure is the least, as this machine's noise only adds. */
const RUNS = Math.max(1, Number(process.env.BENCH_LAKE_RUNS ?? 2));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-bench-lake-demo-'));

/** The demo's step times (its "[n/9] label … (x s)" lines) and its whole time, in seconds; through a counting proxy, its requests per step too. */
async function demo(name: string, lake?: { store: string; dataPath: string }, proxy?: { requests: number; counted: Map<string, number> }): Promise<Map<string, number>> {
  const steps = new Map<string, number>();
  const t0 = performance.now();
  const first = proxy?.requests ?? 0;
  let seen = first;
  await runDemo({
    dataDir: path.join(dir, name),
    lake,
    write: (line) => {
      const m = /^\[\d+\/\d+\] (\S+)\s.*\((\d+(?:\.\d+)?) s\)$/.exec(line);
      if (m) steps.set(m[1]!, Number(m[2]));
      if (m && proxy) {
        proxy.counted.set(m[1]!, proxy.requests - seen);
        seen = proxy.requests;
      }
    },
  });
  steps.set('whole demo', (performance.now() - t0) / 1000);
  proxy?.counted.set('whole demo', proxy.requests - first);
  return steps;
}
/**
 * A TCP proxy to 127.0.0.1:port that holds every request (a chunk from the client) for `ms` before passing it on, and
 * counts the PostgreSQL requests (a simple query, or the Sync ending an extended one) that pass.
 */
interface Proxy { port: number; requests: number; counted: Map<string, number>; close: () => void; onRequest?: () => void }
async function slowProxy(port: number, ms: number): Promise<Proxy> {
  const out: Proxy = { port: 0, requests: 0, counted: new Map<string, number>(), close: () => server.close() };
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    let started = false; // the startup message (and an SSL request before it) has no type byte
    client.on('data', (d) => {
      setTimeout(() => upstream.write(d), ms);
      for (buf = Buffer.concat([buf, d]); buf.length >= 5;) {
        const len = started ? buf.readInt32BE(1) + 1 : buf.readInt32BE(0);
        if (buf.length < len) break;
        if (started && (buf[0] === 0x51 || buf[0] === 0x53)) (out.requests++, out.onRequest?.());
        else if (!started && buf.readInt32BE(4) !== 80877103) started = true;
        buf = buf.subarray(len);
      }
    });
    upstream.on('data', (d) => client.write(d));
    const end = () => { client.destroy(); upstream.destroy(); };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  out.port = (server.address() as net.AddressInfo).port;
  return out;
}

/** Counts each catalog request through the proxy to the store statement begun last and still running, by its shape. */
function askedBy(proxy: Proxy): Map<string, { requests: number; runs: number }> {
  const asked = new Map<string, { requests: number; runs: number }>(), running: string[] = [];
  const of = (sql: string) => asked.get(sql) ?? asked.set(sql, { requests: 0, runs: 0 }).get(sql)!;
  statementWatch.begin = (text) => {
    const sql = text.replace(/\s+/g, ' ').replace(/'[^']*'/g, "'…'").replace(/\b\d+\b/g, 'N').trim().slice(0, 100);
    of(sql).runs++;
    running.push(sql);
    return () => void running.splice(running.lastIndexOf(sql), 1);
  };
  proxy.onRequest = () => void of(running.at(-1) ?? '(between statements: opening, the writers\' lock)').requests++;
  return asked;
}

/**
 * A lake grown old: a filtered read with the catalog holding 2,000,000 more file statistics rows (of a table the lake
 * does not have), with the index cbp makes on them (store/lake.ts ensureLakeIndex) and without it.
 */
async function statsIndexEffect(pg: { port: number }, db: string, lake: { store: string; dataPath: string }): Promise<void> {
  const c = new pgClient.Client({ host: '127.0.0.1', port: pg.port, user: 'cbp', database: db });
  await c.connect();
  const store = await openStore({ dbPath: 'lake', lake: { catalog: lake.store.replace(/^ducklake:postgres:/, ''), dataPath: lake.dataPath } });
  try {
    await c.query(`INSERT INTO ducklake_file_column_stats (data_file_id, table_id, column_id, column_size_bytes, value_count, null_count, min_value, max_value, contains_nan)
      SELECT 900000000 + g / 20, 999999, g % 20, 10, 10, 0, 'a', 'z', false FROM generate_series(1, 2000000) g; ANALYZE ducklake_file_column_stats`);
    const read = async () => { let best = Infinity; for (let i = 0; i < 5; i++) { const t = performance.now(); await store.transaction((s) => s.all("SELECT count(*) FROM loads WHERE kind = 'mid_report'")); best = Math.min(best, performance.now() - t); } return best; };
    const indexed = await read();
    await c.query(`DROP INDEX ${STATS_INDEX}`);
    const bare = await read();
    console.log(`
A filtered read of a lake whose catalog holds 2,000,000 more file statistics rows: ${indexed.toFixed(1)} ms with the index, ${bare.toFixed(1)} ms without (${(bare / indexed).toFixed(1)}×)`);
  } finally {
    store.close();
    await c.end();
  }
}

if (!postgresBin() || !fs.existsSync(path.join(DEFAULT_LAKE_EXTENSIONS_DIR, 'v1.5.5'))) {
  console.log('lake bench skipped: it needs PostgreSQL (initdb, postgres) and `npm run lake:install`');
} else {
  const pg = await startLocalPostgres(path.join(dir, 'pg'));
  const proxy = await slowProxy(pg.port, LATENCY_MS);
  try {
    const lakeAt = (db: string, port = pg.port) => {
      pg.createDb(db);
      const dataPath = path.join(dir, `${db}-data`);
      fs.mkdirSync(dataPath);
      return { catalog: pg.dsn(db).replace(`port=${pg.port}`, `port=${port}`), dataPath };
    };
    const firstOpen = async (db: string, port?: number) => {
      const lake = lakeAt(db, port);
      const t = performance.now();
      (await openStore({ dbPath: 'lake', lake })).close();
      return (performance.now() - t) / 1000;
    };
    const open = { loopback: await firstOpen('first_open'), slow: await firstOpen('first_open_slow', proxy.port) };
    const toDemo = (l: { catalog: string; dataPath: string }) => ({ store: `ducklake:postgres:${l.catalog}`, dataPath: l.dataPath });
    console.log(`First open of a new lake: ${open.loopback.toFixed(2)} s on loopback (goal ≤ 2 s), ${open.slow.toFixed(2)} s behind ${LATENCY_MS} ms a request`);
    const least = (runs: Array<Map<string, number>>) => new Map([...runs[0]!.keys()].map((k) => [k, Math.min(...runs.map((m) => m.get(k) ?? Infinity))]));
    const files: Array<Map<string, number>> = [];
    const lakes: Array<Map<string, number>> = [];
    const onLake = toDemo(lakeAt('demo0'));
    for (let i = 0; i < RUNS; i++) {
      files.push(await demo(`file${i}`));
      lakes.push(await demo(`lake${i}`, i ? toDemo(lakeAt(`demo${i}`)) : onLake));
    }
    const file = least(files);
    const f = (x: number | undefined) => (x === undefined ? '—' : x.toFixed(1));
    const r = (a: number | undefined, b: number | undefined) => (a === undefined || !b ? '—' : `${(a / b).toFixed(2)}×`);
    const table = (title: string, other: Map<string, number>, goal: string, counted?: Map<string, number>) => {
      console.log(`\nThe demo's steps, seconds: ${title}`);
      console.log(`${'step'.padEnd(14)} ${'file'.padStart(6)} ${'lake'.padStart(6)} ${'ratio'.padStart(7)}  goal ${goal}${counted ? '  catalog requests' : ''}`);
      for (const [step, s] of file) {
        const n = counted?.get(step);
        console.log(`${step.padEnd(14)} ${f(s).padStart(6)} ${f(other.get(step)).padStart(6)} ${r(other.get(step), s).padStart(7)}${n === undefined ? '' : String(n).padStart(12 + goal.length)}`);
      }
    };
    table(`the lake on loopback, the least of ${RUNS} runs a side`, least(lakes), '≤ 1.3×');
    // Reads as an analyst runs them after the demo, nothing changed since: a process each, the file's snapshot against the lake.
    buildCli();
    fs.mkdirSync(path.join(dir, 'reads'));
    const thresholds = { CBP_THRESHOLDS_FILE: path.join(dir, 'file0', 'thresholds.json') };
    const onFile = { ...thresholds };
    const lakeEnv = { ...thresholds, CBP_STORE: onLake.store, CBP_LAKE_DATA_PATH: onLake.dataPath };
    console.log(`\nReads after the demo, nothing changed (cbp in a process of its own), seconds, the least of ${RUNS} runs\n${'read'.padEnd(22)} ${'file'.padStart(6)} ${'lake'.padStart(6)} ${'ratio'.padStart(7)}  goal ≤ 1.3×`);
    for (const [label, args] of [['cbp ratios --json', ['ratios', '--json']], ['cbp report', ['report', '--force']]] as const) {
      const ms = { a: Infinity, b: Infinity };
      for (let i = 0; i < RUNS; i++) {
        const x = runCli(path.join(dir, 'file0'), `file-${args[0]}-${i}`, [...args], onFile);
        const y = runCli(path.join(dir, 'reads'), `lake-${args[0]}-${i}`, [...args], lakeEnv);
        if (x.failed || y.failed) throw new Error(`${label}: ${x.failed ?? y.failed}`);
        [ms.a, ms.b] = [Math.min(ms.a, x.ms), Math.min(ms.b, y.ms)];
      }
      console.log(`${label.padEnd(22)} ${f(ms.a / 1000).padStart(6)} ${f(ms.b / 1000).padStart(6)} ${r(ms.b, ms.a).padStart(7)}`);
    }
    await statsIndexEffect(pg, 'demo0', onLake);
    if (process.env.BENCH_LAKE_SLOW !== '0') {
      const asked = askedBy(proxy);
      table(`the lake behind ${LATENCY_MS} ms a request, one run (the file's least of ${RUNS})`, await demo('slow', toDemo(lakeAt('demo_slow', proxy.port)), proxy), '≤ 2×', proxy.counted);
      statementWatch.begin = undefined;
      console.log(`\nThe statements that asked the catalog most behind the proxy (a request counts to the latest statement in flight)\n${'requests'.padStart(8)} ${'runs'.padStart(5)}  statement`);
      for (const [sql, a] of [...asked].sort((x, y) => y[1].requests - x[1].requests).slice(0, 12)) console.log(`${String(a.requests).padStart(8)} ${String(a.runs).padStart(5)}  ${sql}`);
    }
  } finally {
    proxy.close();
    await pg.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
