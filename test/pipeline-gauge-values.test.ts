// The pipeline gauges' values, not just their presence, as the worker's /metrics serves them from a small store:
// covered_to per kind, the alert levels in force, the quarantine (a 0 series for every known kind without rows)
// and the rejected orders.
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createWorkerMetrics } from '../worker/metrics.ts';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { loadReport } from '../store/load.ts';
import { recordReportFetch } from '../store/windows.ts';
import { recordOrderPushes } from '../store/orders.ts';
import { QUARANTINE_KINDS } from '../store/pipeline-gauges.ts';
import { chargeback, tmpDir, writeJson } from './store-fixtures.ts';

function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const seconds = (iso: string) => Date.parse(iso) / 1000;

const stores: Store[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
});

/** One alert state row; the gauge counts a series' highest-ranked 'reached' level of its latest month. */
async function state(s: Store, mid: string, network: string, program: string, level: string, rank: number, month: string, status: string): Promise<void> {
  await s.run(
    `INSERT INTO alert_states (mid, network, program, level, month, status, rank, ratio, numerator, denominator, is_partial, first_seen_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 0.02, 2, 100, false, TIMESTAMP '2026-11-01 03:00:00', TIMESTAMP '2026-11-01 03:00:00')`,
    [mid, network, program, level, month, status, rank],
  );
}

describe('pipeline gauge values', () => {
  it('serves covered_to, alert levels, quarantine (0 for kinds without rows) and rejected orders as the store holds them', async () => {
    const dir = tmpDir();
    const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    stores.push(store);

    // covered_to: a window the service had not finished (known until its answer), and a finished one (its last second).
    const fetch = { fetchedAt: '2026-11-02T12:00:05Z', records: 1, quarantined: 0 };
    await recordReportFetch(store, { ...fetch, kind: 'chargebacks', window: { from: '2026-11-01', to: '2026-11-02' }, serviceTime: '2026-11-02T12:00:00Z' });
    await recordReportFetch(store, { ...fetch, kind: 'prevention', window: { from: '2026-10-25', to: '2026-10-31' }, serviceTime: '2026-11-02T12:00:00Z' });

    // Two chargebacks quarantined (amounts that are no numbers), one loaded.
    const file = writeJson(dir, 'cb.json', [chargeback({ case_number: 'CB-1' }), chargeback({ case_number: 'CB-2', amount: 'ten dollars' }), chargeback({ case_number: 'CB-3', amount: 'n/a' })]);
    const loaded = await loadReport(store, file, { kind: 'chargebacks', seenAt: '2026-11-02T12:00:00Z' });
    expect(loaded.quarantined).toBe(2);

    await state(store, 'm1', 'mastercard', 'ecp', 'ecm', 1, '2026-10', 'reached');
    await state(store, 'm2', 'mastercard', 'ecp', 'ecm', 1, '2026-10', 'reached');
    // m3 holds two levels in its latest month: only the higher counts.
    await state(store, 'm3', 'mastercard', 'ecp', 'ecm', 1, '2026-10', 'reached');
    await state(store, 'm3', 'mastercard', 'ecp', 'excessive', 2, '2026-10', 'reached');
    await state(store, 'm4', 'visa', 'vamp', 'excessive', 2, '2026-10', 'reached');
    // m5 reached a level in September and was resolved in October: not in force.
    await state(store, 'm5', 'visa', 'vamp', 'excessive', 2, '2026-09', 'reached');
    await state(store, 'm5', 'visa', 'vamp', 'excessive', 2, '2026-10', 'resolved');

    const push = { hash: 'h', change: 'new' as const, runId: 'p1' };
    await recordOrderPushes(
      store,
      [
        { ...push, order_id: 'o1', status: 'pushed', serviceId: 's1', line: 1 },
        { ...push, order_id: 'o2', status: 'rejected', httpStatus: 422, message: 'bad amount', line: 2 },
        { ...push, order_id: 'o3', status: 'rejected', httpStatus: 422, message: 'bad date', line: 3 },
      ],
      new Date('2026-11-02T03:00:00Z'),
    );

    const m = createWorkerMetrics({ store: () => store, snapshotPath: path.join(dir, 'published', 'cbp.duckdb') });
    await m.refreshPipeline();
    const text = await m.source.render();

    expect(sample(text, 'cbp_covered_to_timestamp_seconds{kind="chargebacks"}')).toBe(seconds('2026-11-02T12:00:00Z'));
    expect(sample(text, 'cbp_covered_to_timestamp_seconds{kind="prevention"}')).toBe(seconds('2026-10-31T23:59:59Z'));
    expect(text).not.toMatch(/^cbp_covered_to_timestamp_seconds\{kind="mid_report"\}/m);

    expect(sample(text, 'cbp_alert_levels_open{network="mastercard",program="ecp",level="ecm"}')).toBe(2);
    expect(sample(text, 'cbp_alert_levels_open{network="mastercard",program="ecp",level="excessive"}')).toBe(1);
    expect(sample(text, 'cbp_alert_levels_open{network="visa",program="vamp",level="excessive"}')).toBe(1);
    expect(text.match(/^cbp_alert_levels_open\{/gm)).toHaveLength(3);

    expect(sample(text, 'cbp_quarantined_rows{kind="chargebacks"}')).toBe(2);
    // Every other kind a quarantine row can have is there at 0, so an alert on growth sees its first rows.
    expect(QUARANTINE_KINDS).toEqual(expect.arrayContaining(['chargebacks', 'prevention', 'mid_report', 'event']));
    for (const kind of QUARANTINE_KINDS.filter((k) => k !== 'chargebacks')) expect(sample(text, `cbp_quarantined_rows{kind="${kind}"}`), kind).toBe(0);
    expect(text.match(/^cbp_quarantined_rows\{/gm)).toHaveLength(QUARANTINE_KINDS.length);

    expect(sample(text, 'cbp_rejected_orders')).toBe(2);
    await m.stop();
  });
});
