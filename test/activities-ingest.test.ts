// ingestEvents and enrich with the REAL activities: the sandbox pushes events to a real receiver, the journal
// is loaded into events_raw once (a second run loads nothing), and matched events get their lookups.
import path from 'node:path';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../sandbox/index.ts';
import type { RunningReceiver } from '../webhook/index.ts';
import type { Pipeline } from '../cli/pipeline.ts';
import { admin, startWithReceiver, type WithReceiver } from './activities-fixtures.ts';

let sb: RunningSandbox;
let receiver: RunningReceiver;
let p: Pipeline;
let dir: string;
let env: WithReceiver;
const AUTH = { username: 'cbp-hook', password: 'hook-password-ingest' };

beforeAll(async () => {
  env = await startWithReceiver(AUTH);
  ({ sb, receiver, p, dir } = env);
});
afterAll(async () => {
  await env?.close();
});

describe('ingestEvents and enrich with the real activities', () => {
  it('loads every event the receiver acknowledged, once, and looks up the matched ones', async () => {
    await p.runner.reconcileSubscriptions({ webhookUrl: receiver.url, email: 'ops@merchant.example', auth: { username: AUTH.username } });
    // Orders of the scenario already due: their cases match, so .match events flow and lookups have work.
    const clock = (await admin<{ now: string }>(sb, 'GET', '/clock')).now;
    const due = sb.state.world.orders.filter((o) => o.order_date <= clock).slice(-200);
    const file = path.join(dir, 'orders.ndjson');
    fs.writeFileSync(file, due.map((o) => JSON.stringify(o)).join('\n') + '\n');
    await p.runner.pushOrders({ source: file });
    await admin(sb, 'POST', '/clock', { advance: 'P3D' });
    // Closing seals the open segment: ingest reads sealed segments only.
    await receiver.close();

    const deliveries = await admin<Array<{ event_guid: string; status?: number }>>(sb, 'GET', '/deliveries');
    const acknowledged = new Set(deliveries.filter((d) => d.status === 200).map((d) => d.event_guid));
    expect(acknowledged.size).toBeGreaterThan(8);

    const r = await p.runner.ingestEvents({});
    expect(r.failed).toBe(0);
    expect(r.segments).toBeGreaterThan(0);
    const rows = await p.store.all<{ event_guid: string }>('SELECT event_guid FROM events_raw');
    expect(new Set(rows.map((x) => x.event_guid))).toEqual(acknowledged);
    expect(r.events).toBe(acknowledged.size);

    const again = await p.runner.ingestEvents({});
    expect(again).toEqual({ segments: 0, events: 0, duplicates: 0, quarantined: 0, failed: 0 });

    const matched = await p.store.all<{ n: number }>("SELECT count(*)::INTEGER AS n FROM events_raw WHERE event_type LIKE '%.match'");
    const e = await p.activities.enrich();
    expect(e.failed).toBe(0);
    if (matched[0]!.n > 0) expect(e.lookups).toBeGreaterThan(0);
    // Everything looked up is kept: a second run has nothing left to ask.
    expect(await p.activities.enrich()).toEqual({ lookups: 0, failed: 0 });

    const runs = await p.store.all<{ workflow: string }>("SELECT workflow FROM runs WHERE workflow = 'ingestEvents'");
    // An ingest that loaded nothing is not recorded (it runs every 5 minutes).
    expect(runs).toHaveLength(1);
  });
});
