// Event emission and delivery. Every event goes to every ACTIVE subscription of its type as a JSON POST
// with HTTP Basic from the subscription's auth; any answer but 200 is re-sent on a fixed backoff in
// sandbox time until the event is 72 h old. Sends are tasks on the sandbox clock, so a clock move
// performs (and awaits) every delivery and re-delivery due in it, in time order.
import { Agent, request } from 'undici';
import { isoSeconds } from './clock.ts';
import { stableGuid, type DeliveryAttempt, type EmittedEvent, type SandboxState, type StoredSubscription } from './state.ts';

const MIN = 60_000;
const HOUR = 60 * MIN;
/** Delay before re-send n (after failed attempt n); the last one repeats. Documented in docs/sandbox.md. */
export const RETRY_DELAYS_MS = [1 * MIN, 5 * MIN, 30 * MIN, 2 * HOUR, 6 * HOUR, 12 * HOUR, 24 * HOUR];
/** An event is not re-sent once the next attempt would be more than this long after the first. */
export const GIVE_UP_AFTER_MS = 72 * HOUR;

export type SendResult = { status: number } | { error: string };

/** Whether a webhook url is one the sandbox pushes to: https anywhere, plain http only on loopback. */
export function webhookUrlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `url ${JSON.stringify(url)} is not an absolute URL`;
  }
  if (u.protocol === 'https:') return undefined;
  if (u.protocol === 'http:') {
    if (isLoopback(u.hostname)) return undefined;
    return `url ${JSON.stringify(url)}: the service pushes events over https only; the sandbox also accepts plain http on loopback addresses (127.x, ::1, localhost)`;
  }
  return `url ${JSON.stringify(url)}: expected an https URL`;
}

const isLoopback = (host: string) => {
  const h = host.replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
};

// A local receiver serving https itself usually has a self-signed certificate: on loopback only, the
// sandbox does not verify it (everywhere else undici's default verification applies).
let loopbackTls: Agent | undefined;
function dispatcherFor(url: string): Agent | undefined {
  const u = new URL(url);
  if (u.protocol !== 'https:' || !isLoopback(u.hostname)) return undefined;
  loopbackTls ??= new Agent({ connect: { rejectUnauthorized: false } });
  return loopbackTls;
}

function basic(auth: { username: string; password: string }): string {
  return `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`;
}

/** One HTTP request to a webhook, with a timeout; never throws. */
export async function sendToWebhook(
  sub: Pick<StoredSubscription, 'url' | 'auth'>,
  method: 'POST' | 'OPTIONS',
  body: Record<string, unknown> | undefined,
  timeoutMs: number,
): Promise<SendResult> {
  try {
    const res = await request(sub.url, {
      method,
      headers: {
        authorization: basic(sub.auth),
        'user-agent': 'cbp-sandbox',
        ...(body ? { 'content-type': 'application/json' } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
      dispatcher: dispatcherFor(sub.url),
    });
    await res.body.dump().catch(() => undefined);
    return { status: res.statusCode };
  } catch (e) {
    const err = e as Error & { code?: string; cause?: { code?: string; message?: string } };
    return { error: [err.code ?? err.cause?.code, err.message].filter(Boolean).join(': ') || String(e) };
  }
}

function record(state: SandboxState, a: Omit<DeliveryAttempt, 'time'>): DeliveryAttempt {
  const full: DeliveryAttempt = { ...a, time: state.clock.nowIso() };
  state.deliveries.push(full);
  return full;
}

/** Emits an event at the sandbox clock's now: records it and schedules its delivery to every active subscription of its type. */
export function emit(state: SandboxState, eventType: string, entityGuid: string, fields: Record<string, unknown>): EmittedEvent {
  const at = state.clock.nowIso();
  const event: EmittedEvent = {
    event_guid: stableGuid('evt', eventType, entityGuid, at),
    event_type: eventType,
    event_timestamp: at,
    payload: {},
  };
  event.payload = { event_guid: event.event_guid, event_type: eventType, event_timestamp: at, ...fields };
  state.events.push(event);
  const firstAt = state.clock.now();
  for (const sub of state.subscriptions.values()) {
    if (sub.event_type !== eventType || !sub.active) continue;
    const hold = state.faults.deliveryHoldBack();
    state.clock.schedule(firstAt + hold, `deliver ${eventType}`, () => attempt(state, event, sub.guid, 1, firstAt));
  }
  return event;
}

async function attempt(state: SandboxState, event: EmittedEvent, subGuid: string, n: number, firstAt: number): Promise<void> {
  const sub = state.subscriptions.get(subGuid);
  const base = { event_guid: event.event_guid, event_type: event.event_type, subscription_guid: subGuid, method: 'POST' as const, attempt: n };
  if (!sub || !sub.active) {
    record(state, { ...base, url: sub?.url ?? '', outcome: sub ? 'dropped: subscription inactive' : 'dropped: subscription deleted' });
    return;
  }
  const res = await sendToWebhook(sub, 'POST', event.payload, state.deliveryTimeoutMs);
  const ok = 'status' in res && res.status === 200;
  let outcome = 'delivered';
  if (!ok) {
    const next = state.clock.now() + (RETRY_DELAYS_MS[n - 1] ?? RETRY_DELAYS_MS[RETRY_DELAYS_MS.length - 1]);
    if (next - firstAt > GIVE_UP_AFTER_MS) outcome = 'gave up: too old';
    else {
      outcome = `retry at ${isoSeconds(next)}`;
      state.clock.schedule(next, `redeliver ${event.event_type}`, () => attempt(state, event, subGuid, n + 1, firstAt));
    }
  }
  record(state, { ...base, url: sub.url, ...res, outcome });
  if (state.faults.deliveryDuplicate()) {
    const dup = await sendToWebhook(sub, 'POST', event.payload, state.deliveryTimeoutMs);
    record(state, { ...base, url: sub.url, ...dup, outcome: 'duplicate send (fault injection)', duplicate: true });
  }
}
