// What Temporal would record of a pushOrders run: the workflow's input and result and every activity's input
// and result. pushOrders runs through the local runner with the real activities against the sandbox, every
// activity wrapped to keep a copy of what crossed the boundary; none of it may hold an order's personal
// data (names, e-mails, card digits, addresses), a credential, or more than 64 KiB.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Activities } from '../activities/types.ts';
import type { RunningSandbox } from '../sandbox/index.ts';
import { createLocalRunner } from '../worker/local.ts';
import { pushOrders } from '../workflows/push-orders.ts';
import { configFor, pipelineFor, rmrf, sandbox, tempDir } from './activities-fixtures.ts';
import { valueViolations } from './helpers/history-payloads.ts';
import { ORDER_MARKERS, plantedOrder } from './helpers/history-rules.ts';

let sb: RunningSandbox;
let dir: string;

beforeAll(async () => {
  dir = tempDir();
  sb = await sandbox();
});
afterAll(async () => {
  await sb?.close();
  rmrf(dir);
});

// The orders and the rule are test/helpers/history-rules.ts's and history-payloads.ts's, shared with the
// histories recorded from a real server (test/temporal-replay-recorded.test.ts).
const order = plantedOrder;

describe('the planted orders\' markers', () => {
  it('find every personal field of a planted order, the card digits as a value or in a text, and not by chance in an event time or an id', () => {
    const o = plantedOrder(7);
    for (const [k, v] of Object.entries(o)) if (!['order_id', 'order_date', 'order_total', 'currency', 'cc_last_4'].includes(k)) expect(JSON.stringify({ [k]: v }), k).toMatch(ORDER_MARKERS);
    expect('card 492181, declined').toMatch(ORDER_MARKERS);
    for (const chance of ['"eventTime":"2026-11-29T08:21:05.286492181Z"', '"2026-11-29T08:21:05.492181899Z"', '"taskId":"104921812"', '"runId":"2849f97f-a492181b-4ad7"']) {
      expect(chance).not.toMatch(ORDER_MARKERS);
    }
  });
});

describe('pushOrders as workflow history sees it', () => {
  it('carries a path, cursors and counts only: no order field values, no credential, no payload over 64 KiB', async () => {
    const n = 1_200;
    const lines = Array.from({ length: n }, (_, i) => JSON.stringify(order(i)));
    // A refused order (the service's 422 message names the field) and an invalid line (the validator shows the value).
    lines.push(JSON.stringify({ ...order(n), order_total: undefined, order_id: 'PII-refused' }));
    lines.push(JSON.stringify({ ...order(n + 1), cc_last_4: '12' }));
    const source = path.join(dir, 'orders.ndjson');
    fs.writeFileSync(source, lines.join('\n') + '\n');

    const recorded: Array<{ what: string; payload: unknown }> = [];
    const wrap = (a: Activities): Activities => {
      const out: Record<string, unknown> = {};
      for (const [name, fn] of Object.entries(a)) {
        out[name] = async (...args: unknown[]) => {
          recorded.push({ what: `${name} input`, payload: args });
          const r = await (fn as (...x: unknown[]) => Promise<unknown>).apply(a, args);
          recorded.push({ what: `${name} result`, payload: r ?? null });
          return r;
        };
      }
      return out as unknown as Activities;
    };
    const cfg = configFor(sb, dir);
    const p = await pipelineFor(cfg);
    try {
      const runner = createLocalRunner(wrap(p.activities));
      const input = { source, batchSize: 500 };
      recorded.push({ what: 'workflow input', payload: input });
      const result = await runner.pushOrders(input);
      recorded.push({ what: 'workflow result', payload: result });

      // A continued run's input (what continue-as-new records) carries the same: cursor and counts.
      const paused = await pushOrders({ source, batchSize: 500 }, { ...wrap(p.activities), now: () => new Date().toISOString() }, { shouldPause: () => true });
      expect(paused.status).toBe('continue');
      recorded.push({ what: 'continued input', payload: paused.next }, { what: 'continued result', payload: paused });

      const secrets = [cfg.dataPassword, cfg.dataUsername, cfg.apiSecret, cfg.reportingKey, cfg.companyToken, cfg.webhookPassword].filter(
        (s): s is string => typeof s === 'string' && s.length >= 4,
      );
      const keys = [await p.clients.data.getKey()];
      for (const { what, payload } of recorded) {
        expect(valueViolations(what, payload, { forbidden: [...secrets, ...keys] })).toEqual([]);
        expect(JSON.stringify(payload), what).not.toMatch(ORDER_MARKERS);
      }
      expect(result).toMatchObject({ status: 'done', read: n + 2, new: n, rejected: 1, invalid: 1 });
      expect(recorded.filter((r) => r.what === 'pushOrderBatch input').length).toBeGreaterThanOrEqual(4);
    } finally {
      await p.close();
    }
  });
});
