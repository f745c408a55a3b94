import { afterEach, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import path from 'node:path';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { ingestEvents } from '../store/ingest.ts';
import { enrichEvents, type EventLookups } from '../activities/enrich.ts';
import { journalRecord } from '../webhook/server.ts';
import { openJournal, type Journal } from '../webhook/journal.ts';
import { listClosedSegments } from '../lib/journal-files.ts';
import { NotFoundError } from '../lib/errors.ts';
import type { Config } from '../lib/config.ts';
import type { ServiceClients } from '../client/index.ts';
import { createActivities } from '../activities/index.ts';
import { tempDir } from './helpers/tmp.ts';
import { cbp } from './activities-fixtures.ts';

const tmp = () => tempDir();
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function newStore(): Promise<Store> {
  const store = await openTestStore({ dbPath: path.join(tmp(), 'cbp.duckdb') });
  cleanup.push(() => store.close());
  return store;
}

function journal(dir: string): Journal {
  const j = openJournal({ dir, checkIntervalMs: 0 });
  cleanup.push(() => j.close());
  return j;
}

let clock = Date.parse('2026-11-01T10:00:00Z');
async function push(j: Journal, event: Record<string, unknown> | string): Promise<void> {
  clock += 1000;
  await j.append(journalRecord(Buffer.from(typeof event === 'string' ? event : JSON.stringify(event)), new Date(clock)));
}

const cbNew = (guid: string, extra: Record<string, unknown> = {}) => ({
  event_guid: guid,
  event_timestamp: '2026-11-01T09:00:00Z',
  event_type: 'chargeback.new',
  chargeback_guid: 'cb_1',
  case_number: 'C-1',
  mid: 'MID-1',
  amount: '94.76',
  currency: 'usd',
  card_brand: 'MasterCard',
  card_first_6: 41111,
  card_last_4: '1111',
  chargeback_date: '2026-10-30',
  reason_code: '4837',
  ...extra,
});

describe('ingest of journal segments', () => {
  it('loads sealed segments into events_raw, ignores the open one, keeps the first of re-deliveries, and archives', async () => {
    const store = await newStore();
    const dir = tmp();
    const j1 = journal(dir);
    await push(j1, cbNew('ev_1'));
    await push(j1, cbNew('ev_2', { event_timestamp: '2026-11-01 09:30:00' }));
    await push(j1, cbNew('ev_1', { amount: '1.00' })); // re-delivered inside the same segment: the first one wins
    await j1.close(); // sealed
    const j2 = journal(dir);
    await push(j2, cbNew('ev_2', { amount: '2.00' })); // re-delivered in a later segment
    await push(j2, { event_guid: 'ev_3', event_type: 'order.refund', order_id: 'o-9' });
    await j2.close();
    const live = journal(dir);
    await push(live, cbNew('ev_open')); // the live receiver's open segment

    const r = await ingestEvents({ store, journalDir: dir });
    expect(r).toMatchObject({ loaded: 3, duplicates: 2, quarantined: 0, failed: 0 });
    expect(r.segments).toHaveLength(2);
    const rows = await store.all<{ event_guid: string; event_type: string; event_timestamp: string; line: number; payload: string }>(
      'SELECT event_guid, event_type, event_timestamp, line, payload FROM events_raw ORDER BY event_guid',
    );
    expect(rows.map((x) => x.event_guid)).toEqual(['ev_1', 'ev_2', 'ev_3']);
    expect(JSON.parse(rows[0].payload).amount).toBe('94.76');
    expect(JSON.parse(rows[1].payload).amount).toBe('94.76');
    expect(rows[1].event_timestamp).toBe('2026-11-01 09:30:00');
    expect(rows[0].event_timestamp).toBe('2026-11-01 09:00:00');
    // Archived after the commit; the open segment untouched.
    expect(listClosedSegments(dir)).toEqual([]);
    expect(fs.readdirSync(path.join(dir, 'archive'))).toHaveLength(2);
    expect(fs.readdirSync(dir).filter((n) => n.endsWith('.ndjson'))).toHaveLength(1);

    // A second run finds nothing new; the open segment is loaded once it is sealed.
    expect(await ingestEvents({ store, journalDir: dir })).toMatchObject({ loaded: 0, segments: [] });
    await live.close();
    expect(await ingestEvents({ store, journalDir: dir })).toMatchObject({ loaded: 1 });
    expect((await store.all<{ n: number }>('SELECT count(*)::INTEGER n FROM events_raw'))[0].n).toBe(4);
  });

  it('keeps apart the segments of two receivers opened in the same millisecond (two hosts): each recorded as loaded once', async () => {
    const store = await newStore();
    const same = new Date('2026-11-01T10:00:00Z');
    const dirs = [tmp(), tmp()];
    for (const [h, dir] of dirs.entries()) {
      const j = openJournal({ dir, checkIntervalMs: 0, now: () => same });
      for (let i = 0; i < 3; i++) await j.append(journalRecord(Buffer.from(JSON.stringify(cbNew(`ev_${h}_${i}`))), same));
      await j.close(); // seals
    }
    const [a, b] = dirs.map((d) => listClosedSegments(d)[0]!);
    expect(a).not.toBe(b);
    for (const dir of dirs) await ingestEvents({ store, journalDir: dir });
    const loads = await store.all<{ segment: string; loaded: number; load_count: number }>('SELECT segment, loaded::INTEGER AS loaded, load_count FROM event_loads ORDER BY segment');
    expect(loads.map((l) => [l.segment, l.loaded, l.load_count])).toEqual([a, b].sort().map((s) => [s, 3, 1]));
  });

  it('stores the payload byte for byte as the service sent it', async () => {
    const store = await newStore();
    const dir = tmp();
    const j = journal(dir);
    const body = '{"event_guid":"ev_raw", "event_type":"chargeback.new",  "amount": 12.3400000000000000001, "n":"é"}';
    await push(j, body);
    await j.close();
    await ingestEvents({ store, journalDir: dir });
    const [row] = await store.all<{ payload: string }>("SELECT payload FROM events_raw WHERE event_guid = 'ev_raw'");
    expect(row.payload).toBe(body);
  });

  it('re-runs cleanly after a crash between the commit and the archiving', async () => {
    const store = await newStore();
    const dir = tmp();
    const j = journal(dir);
    await push(j, cbNew('ev_a'));
    await push(j, cbNew('ev_b'));
    await j.close();
    const [seg] = listClosedSegments(dir);
    await expect(
      ingestEvents({
        store,
        journalDir: dir,
        afterCommit: () => {
          throw new Error('killed after commit');
        },
      }),
    ).rejects.toThrow('killed after commit');
    expect(listClosedSegments(dir)).toEqual([seg]); // not archived
    expect((await store.all<{ n: number }>('SELECT count(*)::INTEGER n FROM events_raw'))[0].n).toBe(2);

    const again = await ingestEvents({ store, journalDir: dir });
    expect(again).toMatchObject({ loaded: 0, duplicates: 2, failed: 0 });
    expect((await store.all<{ n: number }>('SELECT count(*)::INTEGER n FROM events_raw'))[0].n).toBe(2);
    expect(listClosedSegments(dir)).toEqual([]);
    const [load] = await store.all<{ load_count: number; loaded: number }>('SELECT load_count, loaded::INTEGER AS loaded FROM event_loads');
    expect(load).toMatchObject({ load_count: 2, loaded: 2 });
  });

  it('rolls back a segment whose load fails mid-way, leaving it for the next run', async () => {
    const store = await newStore();
    const dir = tmp();
    const j = journal(dir);
    await push(j, cbNew('ev_x'));
    await push(j, cbNew('ev_y'));
    await j.close();
    const [seg] = listClosedSegments(dir);
    // The store fails at the events_raw insert, after the quarantine and staging work of the same transaction.
    const failing: Store = {
      ...store,
      transaction: (fn) =>
        store.transaction((s) =>
          fn({
            ...s,
            run: async (sql, params) => {
              if (/INSERT INTO events_raw/.test(sql)) throw new Error('disk full');
              return s.run(sql, params);
            },
          }),
        ),
    };
    const r = await ingestEvents({ store: failing, journalDir: dir });
    expect(r.failed).toBe(1);
    expect(r.segments[0].error).toMatch(/disk full/);
    expect(listClosedSegments(dir)).toEqual([seg]);
    expect((await store.all<{ n: number }>('SELECT count(*)::INTEGER n FROM events_raw'))[0].n).toBe(0);
    expect((await store.all<{ n: number }>('SELECT count(*)::INTEGER n FROM event_loads'))[0].n).toBe(0);
    const again = await ingestEvents({ store, journalDir: dir });
    expect(again).toMatchObject({ loaded: 2, failed: 0 });
  });

  it('quarantines a line of bytes that are not UTF-8 and loads the rest of its segment', async () => {
    const store = await newStore();
    const dir = tmp();
    const j = journal(dir);
    await push(j, cbNew('ev_before'));
    await j.close();
    const [seg] = listClosedSegments(dir);
    fs.appendFileSync(path.join(dir, seg), Buffer.concat([Buffer.from([0xff, 0xfe, 0x0a]), journalRecord(Buffer.from(JSON.stringify(cbNew('ev_after'))), new Date()), Buffer.from('\n')]));
    const r = await ingestEvents({ store, journalDir: dir });
    expect(r).toMatchObject({ loaded: 2, quarantined: 1, failed: 0 });
  });

  it('quarantines journal lines that are not valid JSON, once, with the reason and the segment', async () => {
    const store = await newStore();
    const dir = tmp();
    const j = journal(dir);
    await push(j, cbNew('ev_ok'));
    await j.close();
    const [seg] = listClosedSegments(dir);
    fs.appendFileSync(path.join(dir, seg), '{"received_at":"2026-11-01T10:00:00.000Z","event":{"event_guid":"ev_cut"\n{"received_at":"2026-11-01T10:00:00.000Z","event":{"event_type":"x"}}\n');
    const r = await ingestEvents({
      store,
      journalDir: dir,
      afterCommit: () => {
        throw new Error('crash');
      },
    }).catch(() => null);
    expect(r).toBeNull();
    const r2 = await ingestEvents({ store, journalDir: dir });
    expect(r2).toMatchObject({ loaded: 0, quarantined: 2 });
    const q = await store.all<{ kind: string; raw: string; reason: string; landing_file: string }>(
      "SELECT kind, raw, reason, landing_file FROM quarantine WHERE kind = 'event' ORDER BY reason",
    );
    expect(q).toHaveLength(2); // the re-run after the crash did not repeat them
    expect(q.map((x) => x.reason)).toEqual(['event has no event_guid', 'journal line is not valid JSON (damaged or hand-edited segment)']);
    expect(q[0].landing_file).toBe(seg);
    expect((await store.all<{ n: number }>('SELECT count(*)::INTEGER n FROM events_raw'))[0].n).toBe(1);
  });
});

describe('typed event views', () => {
  it('types each event type\'s fields, reads both date-time spellings and tells chargeback.responded apart', async () => {
    const store = await newStore();
    const dir = tmp();
    const j = journal(dir);
    await push(j, cbNew('ev_new', { due_date: '2026-11-20', processor_transaction_date: '2026-10-01 08:00:00' }));
    await push(j, { ...cbNew('ev_match'), event_type: 'chargeback.match', order_guid: 'ord_1', order_id: 'A-1', crm_account_guid: 'crm_1' });
    await push(j, { event_guid: 'ev_res', event_type: 'chargeback.responded', event_timestamp: '2026-11-02T00:00:00Z', chargeback_guid: 'cb_1', case_number: 'C-1', mid: 'MID-1', result: 'Pre Arbitration' });
    await push(j, { event_guid: 'ev_dnf', event_type: 'chargeback.responded', chargeback_guid: 'cb_1', case_number: 'C-1', mid: 'MID-1', dnf_reason: 'low value', dnf_timestamp: '2026-11-03 12:00:00' });
    await push(j, {
      event_guid: 'ev_pm', event_type: 'prevention.match', event_timestamp: '2026-11-02T00:00:00Z', prevention_guid: 'pre_1', prevention_type: 'Ethoca', amount: 10,
      prevention_timestamp: '2026-11-01T01:02:03Z', transaction_timestamp: '2026-10-01 00:00:00', order_guid: 'ord_2', mid: 'MID-1',
    });
    await push(j, { event_guid: 'ev_rdr', event_type: 'rdr.new', rdr_guid: 'rdr_1', rdr_case_number: 'R1', rdr_resolution: 'accepted', rdr_date: '2026-11-01', amount: '5.5' });
    await push(j, { event_guid: 'ev_ov', event_type: 'order_validation.match', order_validation_guid: 'ov_1', order_validation_type: 'order_insight', amount: '3.20', card_first_6: 12345, order_guid: 'ord_3' });
    await push(j, { event_guid: 'sub_1', event_type: 'registration.new', subscribed_event_type: 'chargeback.new', event_timestamp: '2026-11-01T00:00:00Z' });
    await push(j, { event_guid: 'ev_unk', event_type: 'chargeback.error', message: 'x' });
    await j.close();
    await ingestEvents({ store, journalDir: dir });

    const [n] = await store.all<Record<string, unknown>>('SELECT * FROM stg_events__chargeback_new');
    expect(n).toMatchObject({
      event_guid: 'ev_new', chargeback_guid: 'cb_1', mid: 'MID-1', currency: 'USD', card_brand: 'mastercard', card_first_6: '041111',
      chargeback_date: '2026-10-30', due_date: '2026-11-20', processor_transaction_date: '2026-10-01 08:00:00', event_timestamp: '2026-11-01 09:00:00',
    });
    expect(Number(n.amount)).toBe(94.76);
    const [m] = await store.all<Record<string, unknown>>('SELECT * FROM stg_events__chargeback_match');
    expect(m).toMatchObject({ event_guid: 'ev_match', order_guid: 'ord_1', order_id: 'A-1', crm_account_guid: 'crm_1' });
    const [res] = await store.all<Record<string, unknown>>('SELECT * FROM stg_events__chargeback_result');
    expect(res).toMatchObject({ event_guid: 'ev_res', result: 'pre-arbitration', received_event_type: 'chargeback.responded' });
    const [dnf] = await store.all<Record<string, unknown>>('SELECT * FROM stg_events__chargeback_dnf');
    expect(dnf).toMatchObject({ event_guid: 'ev_dnf', dnf_reason: 'low value', dnf_timestamp: '2026-11-03 12:00:00' });
    const [pm] = await store.all<Record<string, unknown>>('SELECT * FROM stg_events__prevention_match');
    expect(pm).toMatchObject({ prevention_type: 'ethoca', prevention_timestamp: '2026-11-01 01:02:03', transaction_timestamp: '2026-10-01 00:00:00', order_guid: 'ord_2' });
    const [rdr] = await store.all<Record<string, unknown>>('SELECT * FROM stg_events__rdr_new');
    expect(rdr).toMatchObject({ rdr_guid: 'rdr_1', rdr_resolution: 'Accepted', rdr_date: '2026-11-01' });
    const [ov] = await store.all<Record<string, unknown>>('SELECT * FROM stg_events__order_validation_match');
    expect(ov).toMatchObject({ order_validation_guid: 'ov_1', card_first_6: '012345', order_guid: 'ord_3' });
    const [reg] = await store.all<Record<string, unknown>>('SELECT * FROM stg_events__registration_new');
    expect(reg).toMatchObject({ subscription_guid: 'sub_1', subscribed_event_type: 'chargeback.new' });
    const unk = await store.all<Record<string, unknown>>('SELECT event_guid, event_type FROM stg_events__unknown');
    expect(unk).toEqual([{ event_guid: 'ev_unk', event_type: 'chargeback.error' }]);
    for (const v of ['order_validation_new', 'prevention_new', 'rdr_match']) {
      expect(await store.all(`SELECT * FROM stg_events__${v}`)).toEqual([]);
    }
  });
});

describe('enrichment of matched events', () => {
  it('fetches missing details once, records not-found answers, and asks again only after transient errors', async () => {
    const store = await newStore();
    const dir = tmp();
    const j = journal(dir);
    await push(j, { ...cbNew('ev_m1'), event_type: 'chargeback.match', chargeback_guid: 'cb_1', order_guid: 'ord_1' });
    await push(j, { ...cbNew('ev_m2'), event_type: 'chargeback.match', chargeback_guid: 'cb_2', order_guid: 'ord_1' });
    await push(j, { event_guid: 'ev_p', event_type: 'prevention.match', prevention_guid: 'pre_gone', prevention_type: 'verifi', amount: 1, order_guid: 'ord_2' });
    await push(j, { event_guid: 'ev_o', event_type: 'order_validation.match', order_validation_guid: 'ov_1', order_validation_type: 'x', amount: 1, order_guid: 'ord_3' });
    await push(j, { event_guid: 'ev_r', event_type: 'rdr.match', rdr_guid: 'r1', rdr_case_number: 'R', amount: 1, order_guid: 'ord_4' });
    await push(j, cbNew('ev_unmatched', { chargeback_guid: 'cb_new_only' }));
    await j.close();
    await ingestEvents({ store, journalDir: dir });

    const calls: string[] = [];
    let flaky = true;
    const lookups: EventLookups = {
      async getChargeback(g) {
        calls.push(`cb:${g}`);
        return { chargeback_guid: g, amount: 1 };
      },
      async getPrevention(g) {
        calls.push(`pre:${g}`);
        throw new NotFoundError(`prevention ${g} does not exist`);
      },
      async getOrderValidation(g) {
        calls.push(`ov:${g}`);
        if (flaky) throw Object.assign(new Error('socket hang up'), { retryable: true });
        return { order_validation_guid: g };
      },
      async getOrder(g) {
        calls.push(`ord:${g}`);
        if (g === 'ord_4') throw Object.assign(new Error('HTTP 404'), { httpStatus: 404 });
        return { order_guid: g };
      },
    };
    const r1 = await enrichEvents({ store, events: lookups });
    expect(r1.fetched).toEqual({ chargeback: 2, prevention: 0, order_validation: 0, order: 3 });
    expect(r1.notFound).toEqual({ chargeback: 0, prevention: 1, order_validation: 0, order: 1 });
    expect(r1.failed).toEqual([{ kind: 'order_validation', guid: 'ov_1', error: 'socket hang up' }]);
    expect(calls.sort()).toEqual(['cb:cb_1', 'cb:cb_2', 'ord:ord_1', 'ord:ord_2', 'ord:ord_3', 'ord:ord_4', 'ov:ov_1', 'pre:pre_gone']);
    const [c] = await store.all<{ payload: string; found: boolean }>("SELECT payload, found FROM enriched_chargebacks WHERE chargeback_guid = 'cb_1'");
    expect(JSON.parse(c.payload)).toEqual({ chargeback_guid: 'cb_1', amount: 1 });
    const [gone] = await store.all<{ found: boolean; payload: unknown; error: string }>('SELECT found, payload, error FROM enriched_preventions');
    expect(gone).toMatchObject({ found: false, payload: null, error: expect.stringMatching(/does not exist/) });

    calls.length = 0;
    flaky = false;
    const r2 = await enrichEvents({ store, events: lookups });
    expect(calls).toEqual(['ov:ov_1']);
    expect(r2.fetched.order_validation).toBe(1);
    calls.length = 0;
    await enrichEvents({ store, events: lookups });
    expect(calls).toEqual([]);
  });
});

describe('enrichment holds no store lock while the service answers', () => {
  it("lets another activity's store step run while a lookup waits on the service, and writes the answers after", async () => {
    const store = await newStore();
    const dir = tmp();
    const j = journal(dir);
    await push(j, { ...cbNew('ev_m1'), event_type: 'chargeback.match', chargeback_guid: 'cb_1', order_guid: 'ord_1' });
    await j.close();
    await ingestEvents({ store, journalDir: dir });

    // The worker's way in: an opener, called at the start of every store step of the activities.
    let steps = 0;
    const opener = async () => {
      steps++;
      return store;
    };
    const config = { dataDir: dir, journalDir: dir, snapshotPath: path.join(dir, 'snapshot.duckdb') } as unknown as Config;
    let other: Promise<string[]> | undefined;
    const freeDuringLookup: boolean[] = [];
    const lookup = async (guid: string) => {
      const before = steps;
      other = acts.windowsDone('chargebacks', [{ from: '2026-11-01', to: '2026-11-07' }]);
      // Past every queued microtask: a store step that is not waiting for a lock has begun by now.
      await new Promise((r) => setImmediate(r));
      const free = steps > before;
      freeDuringLookup.push(free);
      // The other activity's store step completes while this lookup is still waiting on the service.
      if (free) expect(await other).toEqual([]);
      return { guid };
    };
    const events = { getChargeback: lookup, getPrevention: lookup, getOrderValidation: lookup, getOrder: lookup };
    const acts = createActivities({ config, store: opener, clients: { events } as unknown as ServiceClients });

    expect(await acts.enrich()).toEqual({ lookups: 2, failed: 0 });
    await other;
    expect(freeDuringLookup).toEqual([true, true]);
    const rows = await store.all<{ guid: string; found: boolean }>(
      'SELECT chargeback_guid AS guid, found FROM enriched_chargebacks UNION ALL SELECT order_guid, found FROM enriched_orders ORDER BY guid',
    );
    expect(rows).toEqual([
      { guid: 'cb_1', found: true },
      { guid: 'ord_1', found: true },
    ]);
  });
});

describe('cbp run ingest', { timeout: 120_000 }, () => {
  it('runs the ingest workflow, so cbp status lists its run', async () => {
    const dir = tmp();
    const journalDir = path.join(dir, 'journal');
    const j = journal(journalDir);
    await push(j, cbNew('ev_cli_1'));
    await push(j, cbNew('ev_cli_2'));
    await j.close();
    const env = {
      CBP_DATA_DIR: dir,
      CBP_DB_PATH: path.join(dir, 'cbp.duckdb'),
      CBP_JOURNAL_DIR: journalDir,
      CBP_SNAPSHOT_PATH: path.join(dir, 'published', 'cbp.duckdb'),
    };
    const ing = await cbp(['run', 'ingest', '--json'], env);
    expect(ing.code, ing.stderr).toBe(0);
    expect(JSON.parse(ing.stdout)).toMatchObject({ loaded: 2, failed: 0, snapshot: { published: true } });

    const st = await cbp(['status', '--json'], env);
    expect(st.code, st.stderr).toBe(0);
    const runs = (JSON.parse(st.stdout) as { runs: Array<{ workflow: string; status: string; run_id: string }> }).runs;
    expect(runs).toEqual([expect.objectContaining({ workflow: 'ingestEvents', status: 'ok', run_id: expect.stringMatching(/^ingestEvents-/) })]);

    // A run that finds nothing new loads nothing and is not recorded, as under Temporal.
    const again = await cbp(['run', 'ingest', '--json'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ loaded: 0, segments: [] });
    const st2 = await cbp(['status', '--json'], env);
    expect((JSON.parse(st2.stdout) as { runs: unknown[] }).runs).toHaveLength(1);
  });
});
