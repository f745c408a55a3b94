// Two parts of the demo's story (cli/commands/demo.ts): the merchant's orders pushed week by week while the
// service's time passes, and the loopback endpoint that records the alert notices sent.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { utcDay } from '../lib/utc.ts';

export interface OrdersPushed {
  /** The service's clock after the last week. */
  now: string;
  pushedNew: number;
  rejected: number;
  invalid: number;
  events: number;
  deliveries: number;
}

/**
 * As a merchant's systems would: each week's export of the orders settled since the last (dataDir/orders/DAY.ndjson),
 * pushed while the service's time passes and its events flow to the receiver. A week at a time keeps each push ahead
 * of the cases that match it.
 */
export async function pushOrdersAsTheySettle(o: {
  dataDir: string;
  orders: ReadonlyArray<{ order_date: string }>;
  clock0: string;
  totalDays: number;
  push: (source: string) => Promise<{ new: number; changed: number; rejected: number; invalid: number }>;
  advance: (days: number) => Promise<{ now: string; events: number; deliveries: number }>;
}): Promise<OrdersPushed> {
  const dir = path.join(o.dataDir, 'orders');
  mkdirSync(dir, { recursive: true });
  const out: OrdersPushed = { now: o.clock0, pushedNew: 0, rejected: 0, invalid: 0, events: 0, deliveries: 0 };
  let exported = '';
  for (let done = 0; done < o.totalDays; ) {
    const due = o.orders.filter((x) => x.order_date > exported && x.order_date <= out.now);
    exported = out.now;
    const file = path.join(dir, `${utcDay(out.now)}.ndjson`);
    writeFileSync(file, due.map((x) => `${JSON.stringify(x)}\n`).join(''));
    const pushed = await o.push(file);
    out.pushedNew += pushed.new + pushed.changed;
    out.rejected += pushed.rejected;
    out.invalid += pushed.invalid;
    const days = Math.min(7, o.totalDays - done);
    const moved = await o.advance(days);
    out.now = moved.now;
    out.events += moved.events;
    out.deliveries += moved.deliveries;
    done += days;
  }
  return out;
}

export interface AlertSink {
  url: string;
  received: Array<{ signature: string | undefined; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

/** A loopback HTTP endpoint that records the alert notices it is sent. */
export async function startAlertSink(): Promise<AlertSink> {
  const received: AlertSink['received'] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        received.push({ signature: req.headers['x-cbp-signature'] as string | undefined, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      } catch {
        // not JSON: still answered, nothing recorded
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/alerts`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
