// A lake's settings and start: the catalog setting's password never shown in any spelling, the file store's schema in
// the lake's dialect, a lake that cannot be reached named at start (exit 2), and two hosts writing one lake at once.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../store/db.ts';
import { lakeDialect, lakeOpenError, withConnectTimeout } from '../store/lake.ts';
import { lakeSecrets } from '../lib/lake-setting.ts';
import { cbp } from './activities-fixtures.ts';
import { lakeTitle, skipLake, startPostgres, type Postgres } from './helpers/postgres.ts';
import { tempDir } from './helpers/tmp.ts';
import { newLake } from './helpers/lake-stores.ts';
import { ingestEvents } from '../store/ingest.ts';
import { recordWindowOutcome } from '../store/windows.ts';
import { journalRecord } from '../webhook/server.ts';
import { openJournal } from '../webhook/journal.ts';

let pg: Postgres;

describe('lake dialect', () => {
  it('knows a password in every spelling an error may quote it', () => {
    expect(lakeSecrets("ducklake:postgres:dbname=x password='Leak Me\\'Now-42'")).toEqual(["Leak Me\\''Now-42", "Leak Me\\'Now-42", "Leak Me''Now-42", "Leak Me'Now-42"]);
    expect(lakeSecrets('ducklake:postgres:dbname=x password=plain')).toEqual(['plain']);
  });

  it('waits 10 s for a catalog to answer its connection unless the setting names its own connect_timeout', () => {
    expect(withConnectTimeout('dbname=x host=h')).toBe('dbname=x host=h connect_timeout=10');
    expect(withConnectTimeout('dbname=x connect_timeout=2 host=h')).toBe('dbname=x connect_timeout=2 host=h');
  });

  it('drops ENUM types (their columns VARCHAR), keys and column compression, and nothing else', () => {
    const sql = `CREATE TYPE st AS ENUM ('a', 'b');
CREATE TABLE t (
  id VARCHAR PRIMARY KEY,
  s st NOT NULL,
  st_log VARCHAR USING COMPRESSION dictionary,
  k INTEGER UNIQUE,
  PRIMARY KEY (id, s)
);`;
    const out = lakeDialect(sql, new Set(['st']));
    expect(out).not.toMatch(/ENUM|PRIMARY|UNIQUE|COMPRESSION/);
    expect(out).toMatch(/s VARCHAR NOT NULL/);
    expect(out).toMatch(/st_log VARCHAR,/);
    expect(out).toMatch(/k INTEGER\n/);
  });

  it('says a catalog that dropped the connection while the lake opened stopped answering (exit 1, run again), one never reached is a setting (exit 2)', () => {
    const l = { catalog: "dbname=x password='s3cret'", dataPath: '/d' };
    const dropped = lakeOpenError(l, new Error('Failed to commit: Failed to execute query "COMMIT": server closed the connection unexpectedly\n\tThis probably means…'));
    expect(dropped.code).toBe('CBP_ERR_STORE_UNAVAILABLE');
    expect(dropped.message).toMatch(/stopped answering \(server closed the connection unexpectedly\).*run the command again/);
    expect(lakeOpenError(l, new Error('Failed to execute query "COMMIT": SSL SYSCALL error: EOF detected')).code).toBe('CBP_ERR_STORE_UNAVAILABLE');
    const refused = lakeOpenError(l, new Error("Unable to connect to Postgres at \"dbname=x password='s3cret'\": Connection refused"));
    expect(refused.code).toBe('CBP_ERR_CONFIG');
    expect(refused.message).not.toContain('s3cret');
    // A host:port that is no PostgreSQL closes the connection while connecting: a setting to fix.
    const notPg = lakeOpenError(l, new Error('connection to server at "127.0.0.1", port 8080 failed: server closed the connection unexpectedly'));
    expect(notPg.code).toBe('CBP_ERR_CONFIG');
  });
});

describe.skipIf(skipLake)(lakeTitle('a lake\'s settings and hosts'), { timeout: 600_000 }, () => {
  beforeAll(async () => {
    pg = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    await pg?.stop();
  });

  it('takes writes of two hosts at once with no row lost or twice: overlapping journals ingested together, one key upserted by both', async () => {
    const lake = newLake(pg);
    const [a, b] = [await openStore({ dbPath: 'lake', lake }), await openStore({ dbPath: 'lake', lake })];
    try {
      // Each host's receiver journaled 60 events; 30 of them reached both (the service's retry hit the other host).
      const journals = await Promise.all([0, 30].map(async (from, h) => {
        const dir = tempDir();
        const j = openJournal({ dir, checkIntervalMs: 0 });
        for (let i = from; i < from + 60; i++) {
          const event = { event_guid: `ev_${i}`, event_type: 'chargeback.result', event_timestamp: '2026-11-01T09:00:00Z', chargeback_guid: `cb_${i}`, result: 'won', host: h };
          await j.append(journalRecord(Buffer.from(JSON.stringify(event)), new Date(Date.parse('2026-11-01T10:00:00Z') + i * 1000)));
        }
        await j.close();
        return dir;
      }));
      const window = { from: '2026-10-01', to: '2026-10-31' };
      const outcome = (s: Store, records: number) => recordWindowOutcome(s, { kind: 'chargebacks', window, records, quarantined: 0, serviceTime: '2026-11-02T00:00:00Z', doneAt: '2026-11-02T00:00:00Z' });
      const [ra, rb] = await Promise.all([
        ingestEvents({ store: a, journalDir: journals[0]! }),
        ingestEvents({ store: b, journalDir: journals[1]! }),
        ...Array.from({ length: 4 }, (_, i) => outcome(i % 2 ? a : b, i)),
      ]);
      expect(ra.failed + rb.failed).toBe(0);
      expect(ra.loaded + rb.loaded).toBe(90);
      expect(ra.duplicates + rb.duplicates).toBe(30);
      const [ev] = await a.all<{ n: number; d: number }>('SELECT count(*)::INTEGER AS n, count(DISTINCT event_guid)::INTEGER AS d FROM events_raw');
      expect(ev).toEqual({ n: 90, d: 90 });
      const done = await b.all<{ n: number }>("SELECT count(*)::INTEGER AS n FROM windows_done WHERE kind = 'chargebacks'");
      expect(done[0]!.n).toBe(1);
    } finally {
      a.close();
      b.close();
    }
  });

  it('is named at start, exit 2, when it cannot be reached or its extensions are missing; the password never shows', async () => {
    const lake = newLake(pg);
    const secret = 'pw-n0t-to-be-seen';
    const dead = `ducklake:postgres:dbname=nothing host=127.0.0.1 port=1 user=cbp password=${secret}`;
    const shown = await cbp(['config', 'show', '--json'], { CBP_STORE: dead, CBP_LAKE_DATA_PATH: lake.dataPath });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('password=***');
    expect(shown.stdout).not.toContain(secret);

    const unreachable = await cbp(['db', 'migrate'], { CBP_STORE: dead, CBP_LAKE_DATA_PATH: lake.dataPath });
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr).toMatch(/CBP_STORE: the lake ducklake:postgres:dbname=nothing .*password=\*\*\* .*cannot be opened/);
    expect(unreachable.stderr + unreachable.stdout).not.toContain(secret);

    // A password written with libpq's escapes: masked in every spelling (as written, unescaped, SQL-quoted).
    const escaped = await cbp(['db', 'migrate'], { CBP_STORE: `ducklake:postgres:dbname=nothing host=127.0.0.1 port=1 user=cbp password='Leak Me\\'Now-42'`, CBP_LAKE_DATA_PATH: lake.dataPath });
    expect(escaped.code).toBe(2);
    expect(escaped.stderr).toMatch(/password=\*\*\*/);
    expect(escaped.stderr + escaped.stdout).not.toMatch(/Leak|Now-42/);

    // A catalog host that takes the connection and never answers: refused at start once the connect timeout passes.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const port = (silent.address() as net.AddressInfo).port;
      const hung = await cbp(['db', 'migrate'], { CBP_STORE: `ducklake:postgres:dbname=x host=127.0.0.1 port=${port} user=cbp`, CBP_LAKE_DATA_PATH: lake.dataPath });
      expect(hung.code).toBe(2);
      expect(hung.stderr).toMatch(/cannot be opened: .*timeout expired/);
    } finally {
      silent.close();
    }

    const noExtensions = await cbp(['db', 'migrate'], { CBP_STORE: lake.store, CBP_LAKE_DATA_PATH: lake.dataPath, CBP_LAKE_EXTENSIONS_DIR: tempDir() });
    expect(noExtensions.code).toBe(2);
    expect(noExtensions.stderr).toMatch(/npm run lake:install/);

    const noDataPath = await cbp(['db', 'migrate'], { CBP_STORE: lake.store });
    expect(noDataPath.code).toBe(2);
    expect(noDataPath.stderr).toMatch(/CBP_LAKE_DATA_PATH is not set/);

    const migrated = await cbp(['db', 'migrate', '--json'], { CBP_STORE: lake.store, CBP_LAKE_DATA_PATH: lake.dataPath });
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(JSON.parse(migrated.stdout).applied.length).toBeGreaterThan(10);
  });
});
