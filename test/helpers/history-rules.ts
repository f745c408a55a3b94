// What the real-server runs plant and what their histories must never hold: the sandbox's throwaway
// credentials, the test webhook password, and orders full of recognisable personal data.
import { DEFAULT_CREDENTIALS, type SandboxCredentials } from '../../sandbox/index.ts';

/** The webhook password of the tests (test/activities-fixtures.ts WEBHOOK). */
const WEBHOOK = { username: 'cbp-test', password: 'test-password-123' };

/** Credentials that must appear in no history: the sandbox's (throwaway test values) and the webhook's. */
export function forbiddenInHistories(credentials: SandboxCredentials = DEFAULT_CREDENTIALS): string[] {
  return [...new Set([...Object.values(DEFAULT_CREDENTIALS), ...Object.values(credentials), WEBHOOK.password, Buffer.from(`${WEBHOOK.username}:${WEBHOOK.password}`).toString('base64')].filter((s): s is string => typeof s === 'string'))];
}

/**
 * Shapes of secrets whose values are not known ahead: an order data key (`key_` + 32 hex, drawn per sandbox)
 * and a token (a JWT, signed per sandbox).
 */
export const SECRET_SHAPES = /key_[0-9a-f]{32}|eyJ[\w-]{8,}\.[\w-]{8,}\.[\w-]+/;
/**
 * The planted orders' personal data, any of it. The card's first six digits only standing alone: inside a longer run
 * of letters or digits (an event time's nanoseconds, a UUID) they turn up by chance, in a history now and then.
 */
export const ORDER_MARKERS = /(?<![0-9A-Za-z])492181(?![0-9A-Za-z])|Hidden Lane|mail\.example|Firstname|Lastname|1ZTRACK|called back|\+1-555-01|198\.51\./;

/** An order whose personal fields are all recognisable (ORDER_MARKERS finds each). */
export function plantedOrder(i: number) {
  return {
    order_id: `PII-${i}`,
    order_date: '2026-01-02T03:04:05Z',
    order_total: `${10 + (i % 90)}.00`,
    currency: 'USD',
    billing_first_name: `Firstname${i}x`,
    billing_last_name: `Lastname${i}y`,
    email_address: `person${i}.private@mail.example`,
    customers_telephone: `+1-555-01${String(i).padStart(4, '0')}`,
    billing_street_address: `${i} Hidden Lane`,
    ip_address: `198.51.${i % 250}.${(i * 7) % 250}`,
    cc_first_6: '492181',
    cc_last_4: String(7000 + (i % 1000)).slice(-4),
    fulfillment: { shipments: [{ shipping_method: 'UPS', tracking_number: `1ZTRACK${i}`, shipping_first_name: `Firstname${i}x`, shipping_street_address: `${i} Hidden Lane` }] },
    notes: [{ timestamp: '2026-01-03T00:00:00Z', note: `called back on +1-555-01${String(i).padStart(4, '0')}` }],
  };
}
