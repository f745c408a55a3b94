// loadReport against DuckDB's own reader, side by side in one run, on a generated 1,000,000-row chargeback
// report (JSON array and CSV). The baseline is the least any load can do: read_json / read_csv of the same
// file into a bare table (CREATE TABLE AS). loadReport also types, validates, de-duplicates, quarantines,
// upserts the current state, writes the status history and records the load, in one transaction.
// Prints ratio = baseline time / loadReport time (target >= 0.8) and the process's peak RSS (target < 512 MB).
import { mkdtempSync, rmSync, statSync, openSync, writeSync, closeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '../store/db.ts';
import { loadReport } from '../store/load.ts';
import { CHARGEBACK_COLUMNS, CHARGEBACK_STATUSES } from '../contract/reporting.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const dir = mkdtempSync(path.join(os.tmpdir(), 'cbp-bench-'));
// Both sides get the same DuckDB settings; this limit keeps the process under the RSS target.
const MEMORY = process.env.BENCH_MEMORY ?? '192MB';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const BRANDS = ['visa', 'mastercard', 'american_express', 'discover'];

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
  return { json, csv };
}

async function time<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const out = await fn();
  return [(performance.now() - t0) / 1000, out];
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const files = writeFiles();
  console.log(`generated ${ROWS} rows: JSON ${(statSync(files.json).size / 1e6).toFixed(0)} MB, CSV ${(statSync(files.csv).size / 1e6).toFixed(0)} MB in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // The machine is shared, so each side runs ROUNDS times, alternating, and the best time of each is compared.
  for (const format of ['csv', 'json'] as const) {
    const file = files[format];
    let tBare = Infinity;
    let tLoad = Infinity;
    for (let round = 0; round < ROUNDS; round++) {
      const bareDb = path.join(dir, `bare-${format}-${round}.duckdb`);
      const bare = await openStore({ dbPath: bareDb, migrate: false, memoryLimit: MEMORY });
      const reader = format === 'json' ? `read_json('${file}', format='array')` : `read_csv('${file}', header=true)`;
      const [tb] = await time(() => bare.run(`CREATE TABLE bare AS SELECT * FROM ${reader}`));
      bare.close();
      rmSync(bareDb, { force: true });
      const storeDb = path.join(dir, `store-${format}-${round}.duckdb`);
      const store = await openStore({ dbPath: storeDb, memoryLimit: MEMORY });
      const [tl, r] = await time(() => loadReport(store, file, { kind: 'chargebacks', format, seenAt: '2024-04-01T00:00:00Z' }));
      store.close();
      rmSync(storeDb, { force: true });
      if (r.rowsLoaded !== ROWS) throw new Error(`expected ${ROWS} rows loaded, got ${r.rowsLoaded} (${r.quarantined} quarantined)`);
      tBare = Math.min(tBare, tb);
      tLoad = Math.min(tLoad, tl);
    }
    console.log(
      `${format.toUpperCase().padEnd(4)} DuckDB CREATE TABLE AS ${tBare.toFixed(2)} s | loadReport ${tLoad.toFixed(2)} s | ratio ${(tBare / tLoad).toFixed(2)} (target >= 0.8; best of ${ROUNDS})`,
    );
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
