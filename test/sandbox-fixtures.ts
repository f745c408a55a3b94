// Shared by the sandbox server tests: a small hand-made world with known times, and a webhook receiver
// on 127.0.0.1:0 that records every request and answers scripted statuses.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { World } from '../sandbox/world.ts';

export const START = '2026-01-10T00:00:00Z';

export function tinyWorld(): World {
  return {
    seed: 7,
    start: START,
    from: '2025-12-01',
    until: '2026-02-01',
    mids: [{ mid: '860100000001', alias: 'Tiny Shop', gateways: ['gw-tiny'], merchant_descriptor: 'TINY*SHOP', region: 'US' }],
    daily: [
      { mid: '860100000001', network: 'visa', day: '2026-01-05', transaction_count: 100, transaction_amount: 5000 },
      { mid: '860100000001', network: 'mastercard', day: '2026-01-05', transaction_count: 50, transaction_amount: 2500 },
    ],
    chargebacks: [
      {
        chargeback_guid: 'cbk_00000000000000000000000000000001',
        case_number: 'CASE-1',
        arn: '74000000000000000000001',
        mid: '860100000001',
        card_brand: 'visa',
        card_first_6: '411111',
        card_last_4: '1111',
        amount: 50,
        currency: 'USD',
        reason_code: '10.4',
        reason_description: 'Other Fraud - Card Absent Environment',
        chargeback_date: '2026-01-04',
        received_at: '2026-01-05T09:00:00Z',
        due_date: '2026-01-25',
        transaction_at: '2025-12-20T15:00:00Z',
        auth_code: 'A1',
        processor_transaction_id: 'ptx-1',
        alternate_transaction_id: 'alt-1',
        statuses: [{ at: '2026-01-05T09:00:00Z', status: 'New' }],
        fraud: true,
        rdr_resolved: false,
      },
      {
        chargeback_guid: 'cbk_00000000000000000000000000000002',
        case_number: 'CASE-2',
        mid: '860100000001',
        card_brand: 'mastercard',
        card_first_6: '522222',
        card_last_4: '4444',
        amount: 94.76,
        currency: 'USD',
        reason_code: '4853',
        reason_description: 'Cardholder Dispute',
        chargeback_date: '2026-01-11',
        received_at: '2026-01-11T10:00:00Z',
        due_date: '2026-02-01',
        transaction_at: '2026-01-02T12:00:00Z',
        auth_code: 'A2',
        processor_transaction_id: 'ptx-2',
        alternate_transaction_id: 'alt-2',
        statuses: [
          { at: '2026-01-11T10:00:00Z', status: 'New' },
          { at: '2026-01-12T00:00:00Z', status: 'Pending' },
          { at: '2026-01-13T00:00:00Z', status: 'Won' },
        ],
        fraud: false,
        rdr_resolved: false,
      },
      {
        chargeback_guid: 'cbk_00000000000000000000000000000003',
        case_number: 'CASE-3',
        arn: '74000000000000000000003',
        mid: '860100000001',
        card_brand: 'visa',
        card_first_6: '433333',
        card_last_4: '3333',
        amount: 20,
        currency: 'USD',
        reason_code: '13.1',
        reason_description: 'Merchandise Not Received',
        chargeback_date: '2026-01-12',
        received_at: '2026-01-12T06:00:00Z',
        due_date: '2026-02-02',
        transaction_at: '2026-01-03T12:00:00Z',
        auth_code: 'A3',
        processor_transaction_id: 'ptx-3',
        alternate_transaction_id: 'alt-3',
        statuses: [
          { at: '2026-01-12T06:00:00Z', status: 'New' },
          { at: '2026-01-14T00:00:00Z', status: 'Did Not Fight' },
        ],
        dnf_reason: 'Amount below threshold',
        fraud: false,
        rdr_resolved: false,
      },
    ],
    alerts: [
      {
        prevention_guid: 'pre_00000000000000000000000000000001',
        prevention_case_number: 'ETH-1',
        mid: '860100000001',
        card_brand: 'visa',
        card_first_6: '444444',
        card_last_4: '4448',
        amount: 30,
        currency: 'USD',
        merchant_descriptor: 'TINY*SHOP',
        prevention_type: 'ethoca',
        prevention_at: '2026-01-11T12:00:00Z',
        transaction_at: '2026-01-08T12:00:00Z',
        statuses: [{ at: '2026-01-11T12:00:00Z', status: 'New' }],
      },
    ],
    rdrs: [
      {
        rdr_guid: 'rdr_00000000000000000000000000000001',
        rdr_case_number: 'RDR-1',
        mid: '860100000001',
        card_brand: 'visa',
        card_first_6: '455555',
        card_last_4: '5555',
        amount: 12.5,
        currency: 'USD',
        merchant_descriptor: 'TINY*SHOP',
        auth_code: 'A5',
        rdr_at: '2026-01-11T13:00:00Z',
        rdr_resolution: 'Accepted',
        transaction_at: '2026-01-07T12:00:00Z',
      },
    ],
    orderValidations: [
      {
        order_validation_guid: 'ovr_00000000000000000000000000000001',
        order_validation_type: 'order_insight',
        received_at: '2026-01-11T14:00:00Z',
        transaction_at: '2026-01-09T12:00:00Z',
        mid: '860100000001',
        card_brand: 'visa',
        card_first_6: '466666',
        card_last_4: '6666',
        amount: 70,
        currency: 'USD',
        auth_code: 'A6',
      },
    ],
    orders: [],
  };
}

export interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

export interface Receiver {
  url: string;
  origin: string;
  requests: Received[];
  /** Decides the status of each request; default 200. */
  respond: (r: Received) => number;
  close(): Promise<void>;
}

export async function startReceiver(respond: (r: Received) => number = () => 200): Promise<Receiver> {
  const rec: Receiver = { url: '', origin: '', requests: [], respond, close: async () => undefined };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        /* kept as text */
      }
      const r: Received = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
      rec.requests.push(r);
      res.statusCode = rec.respond(r);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  rec.origin = `http://127.0.0.1:${port}`;
  rec.url = `${rec.origin}/hook`;
  rec.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return rec;
}

export const basicOf = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
