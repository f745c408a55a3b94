// cbp db backup / restore through the real command: a backup taken while a receiver takes pushes and an ingest runs
// holds every event acknowledged before it started (in the store copy or the journal's unsealed state); the store
// and the journal deleted, a restore and an ingest find every one of them. A restore refuses a store with data
// unless --force, and a lake store is refused with what to do instead.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openTestStore } from './helpers/store-template.ts';
import { ingestEvents as ingestJournal } from '../store/ingest.ts';
import { startReceiver, type RunningReceiver } from '../webhook/index.ts';
import { tempDir } from './helpers/tmp.ts';
import { chargeback, writeJson } from './store-fixtures.ts';
import { runCbp, type CbpRun } from './helpers/cbp-cli.ts';

/** `spawn`: a process of its own, as beside a worker that holds the store (this process's own opens do not lock it out). */
function cbp(dir: string, args: string[], extra: Record<string, string> = {}, spawn = false): Promise<CbpRun> {
  return runCbp(args, { cwd: dir, env: { CBP_DATA_DIR: path.join(dir, 'data'), CBP_LOG_LEVEL: 'silent', ...extra }, spawn });
}

const USER = 'cbp-hook';
const PASS = 'backup-test-password-123';
const auth = `Basic ${Buffer.from(`${USER}:${PASS}`).toString('base64')}`;

async function push(url: string, guid: string): Promise<boolean> {
  const body = { event_guid: guid, event_timestamp: '2026-11-01T10:00:00Z', event_type: 'chargeback.new', case_number: guid, mid: 'MID-1', amount: 1.5, currency: 'USD' };
  const r = await fetch(url, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return r.status === 200;
}

async function storedGuids(dbPath: string): Promise<Set<string>> {
  const s = await openTestStore({ dbPath, readOnly: true, migrate: false });
  try {
    return new Set((await s.all<{ g: string }>('SELECT event_guid AS g FROM events_raw')).map((r) => r.g));
  } finally {
    s.close();
  }
}

describe('cbp db backup and restore', () => {
  let receiver: RunningReceiver | undefined;
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });

  it('backs up during pushes and an ingest; with the store and journal deleted, a restore and an ingest find every row', async () => {
    const dir = tempDir();
    const data = path.join(dir, 'data');
    const journalDir = path.join(data, 'journal');
    // Small segments: pushes keep sealing them, so the backup sees open, sealed and archived ones.
    receiver = await startReceiver({ username: USER, password: PASS, journalDir, port: 0, journal: { segmentMaxBytes: 1500 } });
    const url = receiver.url;
    const acked: string[] = [];
    for (let i = 0; i < 40; i++) if (await push(url, `ev_a${i}`)) acked.push(`ev_a${i}`);
    expect((await cbp(dir, ['run', 'ingest'])).code).toBe(0);

    // Pushes go on while an ingest and the backup run side by side.
    let pushing = true;
    const pusher = (async () => {
      for (let i = 0; pushing && i < 5000; i++) if (await push(url, `ev_b${i}`)) acked.push(`ev_b${i}`);
    })();
    for (let i = 0; acked.length < 60 && i < 1000; i++) await new Promise((r) => setTimeout(r, 10));
    const beforeBackup = [...acked];
    const backupDir = path.join(dir, 'backup');
    const [ingest, bk] = await Promise.all([cbp(dir, ['run', 'ingest']), cbp(dir, ['db', 'backup', '--out', backupDir, '--json'])]);
    pushing = false;
    await pusher;
    expect(ingest.code, ingest.stderr).toBe(0);
    expect(bk.code, bk.stderr).toBe(0);
    const manifest = JSON.parse(bk.stdout) as { source: string; tables: Record<string, number>; journal: { segments: string[] } };
    expect(manifest.source).toBe('store');
    expect(manifest.tables.events_raw).toBeGreaterThan(0);
    expect(manifest.journal.segments.length).toBeGreaterThan(0);
    await receiver.close();
    receiver = undefined;

    // Everything lost: the store, its log, the journal with its archive.
    rmSync(path.join(data, 'cbp.duckdb'), { force: true });
    rmSync(path.join(data, 'cbp.duckdb.wal'), { force: true });
    rmSync(journalDir, { recursive: true, force: true });

    const restored = await cbp(dir, ['db', 'restore', backupDir, '--json']);
    expect(restored.code, restored.stderr).toBe(0);
    const r = JSON.parse(restored.stdout) as { tables: Record<string, number>; journalSegments: string[] };
    expect(r.tables.events_raw).toBe(manifest.tables.events_raw);
    expect(r.journalSegments).toEqual(manifest.journal.segments);
    expect((await cbp(dir, ['run', 'ingest'])).code).toBe(0);
    const guids = await storedGuids(path.join(data, 'cbp.duckdb'));
    expect(beforeBackup.filter((g) => !guids.has(g))).toEqual([]);
    expect(beforeBackup.length).toBeGreaterThanOrEqual(60);
  });

  it('refuses to restore over a store that holds data unless --force', async () => {
    const dir = tempDir();
    const data = path.join(dir, 'data');
    const journalDir = path.join(data, 'journal');
    receiver = await startReceiver({ username: USER, password: PASS, journalDir, port: 0 });
    for (let i = 0; i < 3; i++) await push(receiver.url, `ev_${i}`);
    await receiver.close();
    receiver = undefined;
    expect((await cbp(dir, ['run', 'ingest'])).code).toBe(0);
    const backupDir = path.join(dir, 'backup');
    expect((await cbp(dir, ['db', 'backup', '--out', backupDir])).code).toBe(0);
    const again = await cbp(dir, ['db', 'backup', '--out', backupDir]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/not empty.*\[CBP_ERR_USAGE\]/);

    const refused = await cbp(dir, ['db', 'restore', backupDir]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/not empty \(\d+ rows\).*--force.*\[CBP_ERR_USAGE\]/);
    const forced = await cbp(dir, ['db', 'restore', backupDir, '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toMatch(/replacing a store of \d+ rows/);
    expect((await storedGuids(path.join(data, 'cbp.duckdb'))).size).toBe(3);
    expect(JSON.parse(readFileSync(path.join(backupDir, 'backup.json'), 'utf8'))).toMatchObject({ format: 1, source: 'store' });
  });

  it('copies the published snapshot and the archived segments it lacks while a worker holds the store', async () => {
    const dir = tempDir();
    const data = path.join(dir, 'data');
    const journalDir = path.join(data, 'journal');
    const pushSome = async (guids: string[]) => {
      const rc = await startReceiver({ username: USER, password: PASS, journalDir, port: 0 });
      for (const g of guids) expect(await push(rc.url, g)).toBe(true);
      await rc.close();
    };
    await pushSome(['ev_1', 'ev_2']);
    expect((await cbp(dir, ['run', 'ingest'])).code).toBe(0);
    await pushSome(['ev_3']);
    // The "worker": holds the store, loads the new segment and archives it, publishes nothing.
    const held = await openTestStore({ dbPath: path.join(data, 'cbp.duckdb') });
    const backupDir = path.join(dir, 'backup');
    try {
      await ingestJournal({ store: held, journalDir });
      await pushSome(['ev_4']);
      const bk = await cbp(dir, ['db', 'backup', '--out', backupDir, '--wait-seconds', '0', '--json'], {}, true);
      expect(bk.code, bk.stderr).toBe(0);
      expect(JSON.parse(bk.stdout)).toMatchObject({ source: 'snapshot', journal: { fromArchive: 1 } });
      expect(JSON.parse(bk.stdout).note).toMatch(/held by a writer/);
    } finally {
      held.close();
    }
    rmSync(path.join(data, 'cbp.duckdb'), { force: true });
    rmSync(journalDir, { recursive: true, force: true });
    expect((await cbp(dir, ['db', 'restore', backupDir])).code).toBe(0);
    expect((await cbp(dir, ['run', 'ingest'])).code).toBe(0);
    expect([...(await storedGuids(path.join(data, 'cbp.duckdb')))].sort()).toEqual(['ev_1', 'ev_2', 'ev_3', 'ev_4']);
  });

  it('copies the thresholds file in force, says what a backup leaves out, and a restore says when its rules differ', async () => {
    const dir = tempDir();
    const rules = path.join(dir, 'strict.json');
    writeFileSync(rules, JSON.stringify({ extends_defaults: true, rules: [] }));
    const loaded = await cbp(dir, ['load', 'chargebacks', writeJson(dir, 'cb.json', [chargeback()])], { CBP_THRESHOLDS_FILE: rules });
    expect(loaded.code, loaded.stderr).toBe(0);
    const b = await cbp(dir, ['db', 'backup', '--out', path.join(dir, 'b')], { CBP_THRESHOLDS_FILE: rules });
    expect(b.code, b.stderr).toBe(0);
    expect(b.stdout).toContain(`thresholds: ${rules}, copied as thresholds.json`);
    expect(b.stdout).toContain('not in a backup: the settings (.env, the config file) and their secrets');
    expect(readFileSync(path.join(dir, 'b', 'thresholds.json'), 'utf8')).toBe(readFileSync(rules, 'utf8'));
    // Into a new folder with no thresholds setting: the built-in rules judge, and the restore says the backup's differ.
    const other = tempDir();
    const r = await cbp(other, ['db', 'restore', path.join(dir, 'b')]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`the backup's thresholds file differs: to judge by it, set CBP_THRESHOLDS_FILE=${path.join(dir, 'b', 'thresholds.json')}`);
    const same = tempDir();
    const s = await cbp(same, ['db', 'restore', path.join(dir, 'b')], { CBP_THRESHOLDS_FILE: rules });
    expect(s.code, s.stderr).toBe(0);
    expect(s.stdout).not.toContain('differs');
  });

  it('refuses a lake store, saying how a lake is backed up', async () => {
    const dir = tempDir();
    const r = await cbp(dir, ['db', 'backup', '--out', path.join(dir, 'b')], { CBP_STORE: 'ducklake:postgres:dbname=cbp host=127.0.0.1', CBP_LAKE_DATA_PATH: path.join(dir, 'lake') });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/lake.*pg_dump.*\[CBP_ERR_USAGE\]/);
    expect(existsSync(path.join(dir, 'b'))).toBe(false);
  });
});
