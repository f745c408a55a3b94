// Histories recorded from real runs on a Temporal server (test/temporal-server-real.test.ts with
// CBP_RECORD_HISTORIES=1; docs/orchestration.md, "Tests"), replayed on every machine without a server: a change
// to a workflow that would break the runs in flight (a different activity, order, or end) fails here, the
// determinism guard Temporal users expect. Every payload of every recorded history is read too: no order field,
// no credential, nothing over 64 KiB.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { WORKFLOW_TYPES } from '../workflows/names.ts';
import { historyPayloads, payloadViolations, readableHistory } from './helpers/history-payloads.ts';
import { forbiddenInHistories, ORDER_MARKERS, SECRET_SHAPES } from './helpers/history-rules.ts';
import { quietTemporalRuntime, workflowBundle } from './helpers/temporal-env.ts';

const DIR = fileURLToPath(new URL('./fixtures/histories/', import.meta.url));
const files = fs.existsSync(DIR) ? fs.readdirSync(DIR).filter((f) => f.endsWith('.json')).sort() : [];
const read = (f: string) => JSON.parse(fs.readFileSync(path.join(DIR, f), 'utf8')) as { events: Array<Record<string, any>> };
const typeOf = (h: { events: Array<Record<string, any>> }) => h.events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name as string;

let bundle: { code: string };

beforeAll(async () => {
  quietTemporalRuntime();
  bundle = await workflowBundle();
}, 120_000);

describe('recorded histories', () => {
  it('are there for every workflow type, a continued-as-new backfill and a failed run among them', () => {
    const types = new Set(files.map((f) => typeOf(read(f))));
    for (const t of Object.values(WORKFLOW_TYPES)) expect(types, `a recorded history of ${t}`).toContain(t);
    const ends = files.map((f) => read(f).events.at(-1)!.eventType as string);
    expect(ends).toContain('EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW');
    expect(ends).toContain('EVENT_TYPE_WORKFLOW_EXECUTION_FAILED');
    expect(ends).toContain('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED');
  });

  it.each(files)('%s replays through the workflows as they are now', async (f) => {
    await expect(Worker.runReplayHistory({ workflowBundle: bundle }, historyFromJSON(read(f)), f)).resolves.toBeUndefined();
  });

  it('replays them all in one replay worker too (runReplayHistories)', async () => {
    const histories = files.map((f) => ({ workflowId: f, history: historyFromJSON(read(f)) }));
    const failed: string[] = [];
    for await (const r of Worker.runReplayHistories({ workflowBundle: bundle }, histories)) if (r.error) failed.push(`${r.workflowId}: ${String(r.error)}`);
    expect(failed).toEqual([]);
  });

  it.each(files)('%s carries no order field, no credential and no payload over 64 KiB', (f) => {
    const h = read(f);
    expect(historyPayloads(h).length).toBeGreaterThan(0);
    expect(payloadViolations(h, { forbidden: forbiddenInHistories() })).toEqual([]);
    const text = JSON.stringify(readableHistory(h));
    expect(text).not.toMatch(ORDER_MARKERS);
    expect(text).not.toMatch(SECRET_SHAPES);
  });
});

describe('the payload check', () => {
  it('finds an order field, a credential and an oversized payload planted in a history', () => {
    const h = read(files.find((f) => typeOf(read(f)) === WORKFLOW_TYPES.pushOrders)!);
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
    const planted = structuredClone(h);
    const started = planted.events[0]!.workflowExecutionStartedEventAttributes;
    started.input.payloads.push({ metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: b64({ email_address: 'x@y.z' }) });
    started.input.payloads.push({ metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: b64({ k: forbiddenInHistories()[0] }) });
    started.input.payloads.push({ metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: b64('x'.repeat(70_000)) });
    const v = payloadViolations(planted, { forbidden: forbiddenInHistories() });
    expect(v.join('\n')).toMatch(/order field email_address/);
    expect(v.join('\n')).toMatch(/forbidden value/);
    expect(v.join('\n')).toMatch(/over 65536/);
  });
});
