// Retention is opt-in (CBP_RETENTION_DAYS): off, the maintenance step deletes nothing and says so; on, it deletes the
// landing files and archived journal segments the store has loaded once past the age, keeps every file it has not
// loaded whatever its age, and reports both, in `cbp db maintain` and in the upkeep workflow's summary.
import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../lib/config.ts';
import { createActivities } from '../activities/index.ts';
import type { ServiceClients } from '../client/index.ts';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { applyRetention } from '../store/retention.ts';
import { scheduleDefinitions, scheduleOptionsFromConfig } from '../worker/schedules.ts';
import { tempDir } from './helpers/tmp.ts';
import { runCbp } from './helpers/cbp-cli.ts';

const NOW = new Date('2026-06-01T00:00:00Z');
const OLD = new Date('2026-03-01T00:00:00Z');

/** A data folder with loaded and unloaded landing files and archived segments, old and new; the store records the loaded ones. */
async function world(dir: string, store: Store, setMtime = true) {
  const data = path.join(dir, 'data');
  const landing = path.join(data, 'landing', 'chargebacks');
  const archive = path.join(data, 'journal', 'archive');
  mkdirSync(landing, { recursive: true });
  mkdirSync(archive, { recursive: true });
  const files = {
    oldLoaded: path.join(landing, '2026-02-01_2026-02-07.json'),
    oldNotLoaded: path.join(landing, '2026-02-08_2026-02-14.json'),
    newLoaded: path.join(landing, '2026-05-25_2026-05-31.json'),
    segOldLoaded: path.join(archive, 'seg-0000000001-20260301T000000000Z.closed'),
    segOldNotLoaded: path.join(archive, 'seg-0000000002-20260301T000000000Z.closed'),
    segNew: path.join(archive, 'seg-0000000003-20260530T000000000Z.closed'),
  };
  for (const f of Object.values(files)) writeFileSync(f, '[]\n');
  writeFileSync(`${files.oldLoaded}.meta.json`, '{}');
  if (setMtime) for (const f of [files.oldLoaded, `${files.oldLoaded}.meta.json`, files.oldNotLoaded, files.segOldLoaded, files.segOldNotLoaded]) utimesSync(f, OLD, OLD);
  for (const f of [files.oldLoaded, files.newLoaded]) {
    await store.run(`INSERT INTO loads VALUES ($1, 'chargebacks', 'json', NULL, NULL, TIMESTAMP '2026-03-01', 0, 0, 0, 'x', TIMESTAMP '2026-03-01', TIMESTAMP '2026-03-01', 1)`, [f]);
  }
  for (const f of [files.segOldLoaded, files.segNew]) {
    await store.run(`INSERT INTO event_loads VALUES ($1, 'x', 1, 1, 0, 0, TIMESTAMP '2026-03-01', TIMESTAMP '2026-03-01', 1)`, [path.basename(f)]);
  }
  return { data, files };
}

describe('retention', () => {
  it('is off unless CBP_RETENTION_DAYS is set, and refuses 0', () => {
    expect(loadConfig({ env: {} }).retentionDays).toBeUndefined();
    expect(loadConfig({ env: { CBP_RETENTION_DAYS: '30' } }).retentionDays).toBe(30);
    expect(() => loadConfig({ env: { CBP_RETENTION_DAYS: '0' } })).toThrow(/CBP_RETENTION_DAYS/);
  });

  it('gives a file store the daily upkeep schedule only when retention is on (the worker holds the store)', () => {
    const ids = (env: Record<string, string>) => scheduleDefinitions(scheduleOptionsFromConfig(loadConfig({ env }))).map((d) => d.scheduleId);
    expect(ids({})).toEqual(['cbp-nightly', 'cbp-ingest']);
    expect(ids({ CBP_RETENTION_DAYS: '90' })).toEqual(['cbp-nightly', 'cbp-ingest', 'cbp-maintain']);
  });

  it('deletes only loaded raw files past the age, keeps the rest, and reports both', async () => {
    const dir = tempDir();
    const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    try {
      const { data, files } = await world(dir, store);
      const off = await applyRetention(store, { days: undefined, dataDir: data, journalDir: path.join(data, 'journal'), now: NOW });
      expect(off).toMatchObject({ days: null, landingFiles: 0, journalSegments: 0 });
      expect(Object.values(files).every((f) => existsSync(f))).toBe(true);

      const r = await applyRetention(store, { days: 30, dataDir: data, journalDir: path.join(data, 'journal'), now: NOW });
      expect(r).toMatchObject({ days: 30, before: '2026-05-02T00:00:00.000Z', landingFiles: 1, journalSegments: 1, keptNotLoaded: 2 });
      expect(r.bytes).toBeGreaterThan(0);
      expect(Object.entries(files).filter(([, f]) => !existsSync(f)).map(([k]) => k).sort()).toEqual(['oldLoaded', 'segOldLoaded']);
      expect(existsSync(`${files.oldLoaded}.meta.json`)).toBe(false);
    } finally {
      store.close();
    }
  });

  it('is applied by the upkeep activity, whose summary reports it', async () => {
    const dir = tempDir();
    const data = path.join(dir, 'data');
    const store = await openTestStore({ dbPath: path.join(data, 'cbp.duckdb') });
    try {
      await world(dir, store);
      const config = loadConfig({ env: { CBP_DATA_DIR: data, CBP_RETENTION_DAYS: '30', CBP_LOG_LEVEL: 'silent' } });
      const acts = createActivities({ config, store, clients: {} as ServiceClients, now: () => NOW });
      expect(await acts.maintainStore({})).toMatchObject({ lake: false, retention: { days: 30, landingFiles: 1, journalSegments: 1, keptNotLoaded: 2 } });
      const off = createActivities({ config: loadConfig({ env: { CBP_DATA_DIR: data, CBP_LOG_LEVEL: 'silent' } }), store, clients: {} as ServiceClients, now: () => NOW });
      expect(await off.maintainStore({})).not.toHaveProperty('retention');
    } finally {
      store.close();
    }
  });

  it('is applied and reported by cbp db maintain', async () => {
    const dir = tempDir();
    const store = await openTestStore({ dbPath: path.join(dir, 'data', 'cbp.duckdb') });
    const { files } = await world(dir, store);
    store.close();
    const run = (env: Record<string, string>) =>
      runCbp(['db', 'maintain', ...(env.JSON ? ['--json'] : [])], { cwd: dir, env: { CBP_DATA_DIR: path.join(dir, 'data'), CBP_LOG_LEVEL: 'silent', ...env } });
    const off = await run({});
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).toMatch(/retention: off \(CBP_RETENTION_DAYS unset/);
    expect(existsSync(files.oldLoaded)).toBe(true);
    const on = await run({ CBP_RETENTION_DAYS: '30', JSON: '1' });
    expect(on.code, on.stderr).toBe(0);
    expect(JSON.parse(on.stdout).retention).toMatchObject({ days: 30, landingFiles: 1, journalSegments: 1, keptNotLoaded: 2 });
    expect(existsSync(files.oldLoaded)).toBe(false);
    expect(existsSync(files.oldNotLoaded)).toBe(true);
  });
});
