// loadReport against DuckDB's own reader, side by side in one run, on a generated 1,000,000-row chargeback
// report (JSON array and CSV). The baseline is the least any load can do: read_json / read_csv of the same
// file into a bare table (CREATE TABLE AS, DuckDB's auto-detected types). loadReport also types, validates,
// de-duplicates, quarantines, keeps the current state and the status history, hashes the file and records the
// load, in one transaction; into this empty store it takes its first-load path (store/load.ts).
// The files are landing files as the pipeline leaves them: fetchReport and `cbp load` write a sidecar
// (<file>.meta.json) whose sha256 is computed while landing, so the load reuses it. BENCH_NO_SIDECAR=1
// measures a bare file instead, which the load must hash itself (beside DuckDB's read).
// Prints ratio = baseline time / loadReport time (target >= 0.8) and the process's peak RSS (target < 512 MB).
// With BENCH_REFERENCE=1, for reading the ratio only (not the target; it raises the process's peak RSS, so
// it is off by default): the same bare read with the store's column types (ARN and reason code as text,
// amount DECIMAL, dates TIMESTAMP) — it measured as fast as auto-detection, so the baseline is not flattered.
import { mkdtempSync, rmSync, statSync, openSync, writeSync, closeSync, readSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '../store/db.ts';
import { loadReport } from '../store/load.ts';
import { metaPath } from '../store/landing.ts';
import { CHARGEBACK_COLUMNS, CHARGEBACK_STATUSES } from '../contract/reporting.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const dir = mkdtempSync(path.join(os.tmpdir(), 'cbp-bench-'));
// Both sides get the same DuckDB settings. 256MB, not the store's 384MB default: with six 1M-row loads in one
// process the allocator's leftovers took the process's peak RSS to 443–535 MB at 384MB (a single load in a
// fresh process peaks ~400 MB either way); 192MB starved the JSON reader and slowed both sides unevenly.
const MEMORY = process.env.BENCH_MEMORY ?? '256MB';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const REFERENCE = process.env.BENCH_REFERENCE === '1';
const BRANDS = ['visa', 'mastercard', 'american_express', 'discover'];
const STORE_TYPES = CHARGEBACK_COLUMNS.map((c) => {
  const t = c === 'amount' ? 'DECIMAL(18,4)' : c === 'date_received' || c === 'transaction_date' ? 'TIMESTAMP' : 'VARCHAR';
  return `'${c}': '${t}'`;
}).join(', ');

function record(i: number): Record<string, string | number> {
  const d = 1 + (i % 28);
  return {
    case_number: `CB${String(i).padStart(9, '0')}`,
    status: CHARGEBACK_STATUSES[i % CHARGEBACK_STATUSES.length],
    arn: `7${String(i).padStart(22, '0')}`,
    mid: `MID${i % 50}`,
    card_number: `411111******${String(i % 10000).padStart(4, '0')}`,
    card_type: BRANDS[i % 4],
    amount: Math.round((5 + (i % 997) * 1.37) * 100) / 100,
    currency: 'USD',
    reason_code: String(4800 + (i % 60)),
    reason: 'Fraudulent transaction',
    date_received: `2024-03-${String(d).padStart(2, '0')} 10:${String(i % 60).padStart(2, '0')}:00`,
    transaction_date: `2024-02-${String(d).padStart(2, '0')}`,
    order_id: i % 3 ? `ORD${i}` : '',
    name: i % 3 ? 'Jane Doe' : '',
    tracking_number: '',
  };
}

/** The file's sha256, read in 1 MiB chunks so generating the sidecar does not raise the peak RSS. */
function sha256Chunked(file: string): string {
  const h = createHash('sha256');
  const buf = Buffer.allocUnsafe(1 << 20);
  const fd = openSync(file, 'r');
  try {
    for (let n = readSync(fd, buf); n > 0; n = readSync(fd, buf)) h.update(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return h.digest('hex');
}

function writeFiles(): { json: string; csv: string } {
  const json = path.join(dir, 'chargebacks.json');
  const csv = path.join(dir, 'chargebacks.csv');
  const fj = openSync(json, 'w');
  const fc = openSync(csv, 'w');
  writeSync(fj, '[');
  writeSync(fc, CHARGEBACK_COLUMNS.join(',') + '\n');
  const BATCH = 10_000;
  for (let start = 0; start < ROWS; start += BATCH) {
    const js: string[] = [];
    const cs: string[] = [];
    for (let i = start; i < Math.min(ROWS, start + BATCH); i++) {
      const r = record(i);
      js.push(JSON.stringify(r));
      cs.push(CHARGEBACK_COLUMNS.map((c) => String(r[c])).join(','));
    }
    writeSync(fj, (start ? ',\n' : '\n') + js.join(',\n'));
    writeSync(fc, cs.join('\n') + '\n');
  }
  writeSync(fj, '\n]\n');
  closeSync(fj);
  closeSync(fc);
  if (!process.env.BENCH_NO_SIDECAR) {
    for (const [file, format] of [[json, 'json'], [csv, 'csv']] as const) {
      const meta = {
        kind: 'chargebacks', start: null, end: null, mids: null, format, bytes: statSync(file).size,
        fetched_at: '2024-04-01T00:00:00Z', sha256: sha256Chunked(file),
      };
      writeFileSync(metaPath(file), JSON.stringify(meta));
    }
  }
  return { json, csv };
}

/** Wall seconds, and CPU seconds of the whole process (DuckDB's threads included): on a shared machine the
 * CPU figure is the steadier one, since another tenant's load stretches wall time but not work done. */
async function time<T>(fn: () => Promise<T>): Promise<[number, T, number]> {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const out = await fn();
  const c = process.cpuUsage(c0);
  return [(performance.now() - t0) / 1000, out, (c.user + c.system) / 1e6];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

async function main(): Promise<void> {
  const t0 = performance.now();
  const files = writeFiles();
  console.log(process.env.BENCH_NO_SIDECAR ? 'bare files: loadReport hashes each one itself' : 'landing files with their sidecar (sha256 computed while landing, as fetchReport and cbp load do)');
  console.log(`generated ${ROWS} rows: JSON ${(statSync(files.json).size / 1e6).toFixed(0)} MB, CSV ${(statSync(files.csv).size / 1e6).toFixed(0)} MB in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // The machine is shared, so each side runs ROUNDS times, alternating, and the best time of each is compared
  // (and the median CPU time of each, which other tenants disturb less).
  for (const format of ['csv', 'json'] as const) {
    const file = files[format];
    let tBare = Infinity;
    let tLoad = Infinity;
    let tTyped = Infinity;
    const cBare: number[] = [];
    const cLoad: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const bareDb = path.join(dir, `bare-${format}-${round}.duckdb`);
      const bare = await openStore({ dbPath: bareDb, migrate: false, memoryLimit: MEMORY });
      const reader = format === 'json' ? `read_json('${file}', format='array')` : `read_csv('${file}', header=true)`;
      const [tb, , cb] = await time(() => bare.run(`CREATE TABLE bare AS SELECT * FROM ${reader}`));
      cBare.push(cb);
      if (REFERENCE) {
        const typed = format === 'json' ? `read_json('${file}', format='array', columns={${STORE_TYPES}})` : `read_csv('${file}', header=true, types={${STORE_TYPES}})`;
        const [tt] = await time(() => bare.run(`CREATE TABLE bare_typed AS SELECT * FROM ${typed}`));
        tTyped = Math.min(tTyped, tt);
      }
      bare.close();
      rmSync(bareDb, { force: true });
      const storeDb = path.join(dir, `store-${format}-${round}.duckdb`);
      const store = await openStore({ dbPath: storeDb, memoryLimit: MEMORY });
      const [tl, r, cl] = await time(() => loadReport(store, file, { kind: 'chargebacks', format, seenAt: '2024-04-01T00:00:00Z' }));
      cLoad.push(cl);
      store.close();
      rmSync(storeDb, { force: true });
      if (r.rowsLoaded !== ROWS) throw new Error(`expected ${ROWS} rows loaded, got ${r.rowsLoaded} (${r.quarantined} quarantined)`);
      tBare = Math.min(tBare, tb);
      tLoad = Math.min(tLoad, tl);
    }
    console.log(
      `${format.toUpperCase().padEnd(4)} DuckDB CREATE TABLE AS ${tBare.toFixed(2)} s | loadReport ${tLoad.toFixed(2)} s | ratio ${(tBare / tLoad).toFixed(2)} (target >= 0.8; best of ${ROUNDS})`,
    );
    console.log(
      `     CPU (median of ${ROUNDS}): DuckDB ${median(cBare).toFixed(2)} s | loadReport ${median(cLoad).toFixed(2)} s | ratio ${(median(cBare) / median(cLoad)).toFixed(2)}`,
    );
    if (REFERENCE) console.log(`     (for reference: DuckDB CREATE TABLE AS with the store's column types ${tTyped.toFixed(2)} s, ratio ${(tTyped / tLoad).toFixed(2)})`);
  }
  const rssMb = process.resourceUsage().maxRSS / 1024;
  console.log(`peak RSS ${rssMb.toFixed(0)} MB (target < 512 MB)`);
  rmSync(dir, { recursive: true, force: true });
}

main().catch((e) => {
  rmSync(dir, { recursive: true, force: true });
  console.error(e);
  process.exitCode = 1;
});
