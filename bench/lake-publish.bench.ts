// What it costs to make a nightly's results readable, at 12 and 72 months of history, on the DuckDB file and on a
// lake (issue #27). The file store publishes a snapshot: a copy of the whole store, so its cost grows with history.
// A lake's readers read its latest commit in place: the nightly's own commits are all there is. For each history,
// each store gets BENCH_MIDS MIDs (default 1,000) × H closed months (bench/ratios-data.ts) and a first, full
// evaluation (not timed); then the nightly's load and evaluation (timed), then the publish step (timed).
// Needs PostgreSQL and `npm run lake:install` for the lake's half (skipped, and said so, without them).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { evaluateAlerts } from '../alerts/engine.ts';
import { postgresBin, startLocalPostgres } from '../lib/local-postgres.ts';
import { loadRules } from '../rules/thresholds.ts';
import { openStore, type Store } from '../store/db.ts';
import { DEFAULT_LAKE_EXTENSIONS_DIR } from '../store/lake.ts';
import { publishIfBehind, publishSnapshot } from '../store/snapshot.ts';
import { generateRatioData, loadMonthToDate } from './ratios-data.ts';

const MIDS = Number(process.env.BENCH_MIDS ?? 1_000);
const HISTORIES = (process.env.BENCH_HISTORIES ?? '12,72').split(',').map(Number);
const rules = loadRules();
const monthAt = (k: number) => new Date(Date.UTC(2024, k, 1)).toISOString().slice(0, 7);
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-bench-lake-'));

interface Figure { store: 'file' | 'lake'; h: number; nightly: number; publish: number; bytes: number }
const figures: Figure[] = [];

/** The history, its first evaluation and a first publish (not timed); then the nightly and the publish step (timed). */
async function measure(kind: Figure['store'], h: number, open: () => Promise<Store>, snapshotPath: string): Promise<void> {
  const store = await open();
  try {
    await generateRatioData(store, { mids: MIDS, months: h });
    const before = new Date(`${monthAt(h - 1)}-28T06:00:00Z`);
    await evaluateAlerts(store, { asOf: before, rules, now: before, full: true });
    await publishSnapshot(store, { snapshotPath });
    let s = performance.now();
    const asOf = await loadMonthToDate(store, { mids: MIDS, months: h });
    await evaluateAlerts(store, { asOf, rules, now: asOf });
    const nightly = performance.now() - s;
    s = performance.now();
    const p = await publishIfBehind(store, { snapshotPath });
    const publish = performance.now() - s;
    figures.push({ store: kind, h, nightly, publish, bytes: p.bytes });
    console.log(`${kind.padEnd(4)} ${String(h).padStart(3)} months: nightly (load + evaluation, its commits) ${secs(nightly)}, then readable after ${secs(publish)} more (${p.lake ? 'nothing copied: readers read the lake' : `a ${(p.bytes / 2 ** 20).toFixed(0)} MiB snapshot copied`})`);
  } finally {
    store.close();
  }
}

try {
  console.log(`${MIDS} MIDs x 4 networks; a nightly after H closed months, then what makes its results readable`);
  for (const h of HISTORIES) await measure('file', h, () => openStore({ dbPath: path.join(dir, `file-${h}.duckdb`) }), path.join(dir, `published-${h}`, 'cbp.duckdb'));
  const bin = postgresBin();
  const extensions = fs.existsSync(path.join(DEFAULT_LAKE_EXTENSIONS_DIR, 'v1.5.5'));
  if (!bin || !extensions) {
    console.log(`lake: skipped (${!bin ? 'no PostgreSQL: apt-get install postgresql' : 'no lake extensions: npm run lake:install'})`);
  } else {
    const pg = await startLocalPostgres(path.join(dir, 'pg'));
    try {
      for (const h of HISTORIES) {
        pg.createDb(`bench_${h}`);
        const lake = { catalog: pg.dsn(`bench_${h}`), dataPath: path.join(dir, `lake-${h}`) };
        fs.mkdirSync(lake.dataPath);
        await measure('lake', h, () => openStore({ dbPath: 'lake', lake }), '');
      }
    } finally {
      await pg.stop();
    }
  }
  const of = (store: string, h: number) => figures.find((f) => f.store === store && f.h === h);
  const [lo, hi] = [Math.min(...HISTORIES), Math.max(...HISTORIES)];
  console.log('side by side, nightly + publish (what a nightly costs until analysts see it):');
  for (const store of ['file', 'lake']) {
    const a = of(store, lo);
    const b = of(store, hi);
    if (!a || !b) continue;
    console.log(`  ${store.padEnd(4)} ${lo} months ${secs(a.nightly + a.publish)} (publish ${secs(a.publish)}) | ${hi} months ${secs(b.nightly + b.publish)} (publish ${secs(b.publish)}) | ${hi}/${lo} = ${((b.nightly + b.publish) / (a.nightly + a.publish)).toFixed(2)}x; publish ${hi}/${lo} = ${(b.publish / Math.max(1, a.publish)).toFixed(2)}x`);
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
