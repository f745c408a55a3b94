// The events interface: subscriptions, ping and the four lookups. Every request carries the bearer token;
// a 401 invalidates the token and the request is sent once more with a fresh one.
import {
  ChargebackSchema,
  ListedSubscriptionSchema,
  OrderSchema,
  OrderValidationSchema,
  PingResponseSchema,
  PreventionAlertSchema,
  SubscribableEventTypeSchema,
  SubscribeRequestSchema,
  SubscriptionSchema,
  SubscriptionUpdateSchema,
  id,
  safeParseWithoutValues,
  type Chargeback,
  type ListedSubscriptionFields,
  type Order,
  type OrderValidation,
  type PingResponse,
  type PreventionAlert,
  type Subscription,
} from '../contract/index.ts';
import { z } from 'zod';
import { parseOrThrow } from '../lib/validate.ts';
import { ServiceError, ServiceHttpError, ServiceNetworkError, ServiceResponseError } from './errors.ts';
import { backoffDelay } from './retry.ts';
import { bearer, seg, ServiceHttp, type Call, type ClientOptions, type JsonAnswer } from './http.ts';
import type { TokenClient } from './token.ts';

export interface EventsClientConfig {
  eventsBaseUrl: string;
}

type Opts = { signal?: AbortSignal };

/**
 * One item of the subscription list, read only as far as telling cbp's own from another consumer's
 * (ListedSubscriptionSchema: guid, url, email, event_type, active, each undefined when unreadable).
 */
export interface ListedSubscription extends ListedSubscriptionFields {
  /** Its place in the list, from 0. */
  index: number;
  /**
   * The item parsed with the spec's schema: call it only for one of cbp's own. A mismatch is a
   * ServiceResponseError naming the item's place, guid and fields with what was expected, never a value.
   */
  subscription(): Subscription;
}

export interface EventsClient {
  createSubscription(req: z.input<typeof SubscribeRequestSchema>, o?: Opts): Promise<Subscription>;
  /** Every listed subscription parsed with the spec's schema (one that does not match fails the call, naming no value). */
  listSubscriptions(o?: Opts): Promise<Subscription[]>;
  /**
   * The list read item by item, loosely (see ListedSubscription), so that another consumer's subscription of a
   * shape cbp does not know fails nothing; plus the answer's Date header (the service's clock, ISO UTC;
   * undefined when absent or unreadable).
   */
  listSubscriptionItems(o?: Opts): Promise<{ items: ListedSubscription[]; date?: string }>;
  getSubscription(guid: string, o?: Opts): Promise<Subscription>;
  updateSubscription(guid: string, update: z.input<typeof SubscriptionUpdateSchema>, o?: Opts): Promise<Subscription>;
  /** The body of a delete answer is not shown by the spec: whatever came (JSON, text or nothing) is returned as is. */
  deleteSubscription(guid: string, o?: Opts): Promise<{ status: number; body: unknown }>;
  ping(eventType: string, o?: Opts): Promise<PingResponse>;
  getChargeback(guid: string, o?: Opts): Promise<Chargeback>;
  getPrevention(guid: string, o?: Opts): Promise<PreventionAlert>;
  getOrderValidation(guid: string, o?: Opts): Promise<OrderValidation>;
  getOrder(guid: string, o?: Opts): Promise<Order>;
  close(): Promise<void>;
}

/** Failures the HTTP layer already repeats for a request that is not idempotent (see ServiceHttp.shouldRetry). */
function repeatedBelow(e: ServiceError): boolean {
  return e.httpStatus === 429 || e.httpStatus === 503 || (e instanceof ServiceNetworkError && e.notSent);
}

function guidArg(guid: string, what: string): string {
  return parseOrThrow(id, guid, what);
}

const LIST = 'list subscriptions';
const AnyList = z.array(z.unknown());

/** A list answer's items, each read loosely; the strict parse waits until the caller knows the item is its own. */
function listedItems(answer: JsonAnswer): ListedSubscription[] {
  const list = safeParseWithoutValues(AnyList, answer.body);
  if (!list.ok) throw new ServiceResponseError({ iface: 'events', operation: LIST, httpStatus: answer.status, issues: list.issues });
  return list.value.map((raw, index): ListedSubscription => {
    const fields = ListedSubscriptionSchema.parse(raw);
    return {
      ...fields,
      index,
      subscription() {
        const r = safeParseWithoutValues(SubscriptionSchema, raw);
        if (r.ok) return r.value;
        const which = `item ${index}${fields.guid === undefined ? '' : ` (${fields.guid})`}`;
        throw new ServiceResponseError({ iface: 'events', operation: LIST, httpStatus: answer.status, issues: r.issues.map((i) => `${which}: ${i}`) });
      },
    };
  });
}

export function createEventsClient(cfg: EventsClientConfig, tokens: TokenClient, opts: ClientOptions = {}): EventsClient {
  // Webhook passwords this client has sent: a service error that echoes the request must not carry one on.
  const sentPasswords = new Set<string>();
  const http = new ServiceHttp('events', cfg.eventsBaseUrl, { ...opts, secrets: () => [...tokens.secrets(), ...sentPasswords] });
  const remember = (auth: { password?: unknown } | undefined) => {
    if (typeof auth?.password === 'string' && auth.password !== '') sentPasswords.add(auth.password);
  };

  async function withToken<T>(signal: AbortSignal | undefined, fn: (headers: Record<string, string>) => Promise<T>): Promise<T> {
    const token = await tokens.getToken({ signal });
    try {
      return await fn(bearer(token));
    } catch (e) {
      if (!(e instanceof ServiceHttpError) || e.httpStatus !== 401) throw e;
      // The token may have been revoked or expired early: one more try with a fresh one, then give up.
      tokens.invalidate(token);
      return fn(bearer(await tokens.getToken({ signal })));
    }
  }

  const send = (call: Omit<Call, 'headers'>): Promise<JsonAnswer> => withToken(call.signal, (headers) => http.json({ ...call, headers }));

  const get = async <S extends z.ZodType>(operation: string, path: string, schema: S, o: Opts = {}): Promise<z.infer<S>> =>
    http.parse(schema, await send({ operation, method: 'GET', path, idempotent: true, signal: o.signal }), operation);

  async function listItems(o: Opts = {}): Promise<{ items: ListedSubscription[]; date?: string }> {
    // Other consumers' subscriptions are in the answer: a body that is not JSON is not quoted either.
    const answer = await send({ operation: LIST, method: 'GET', path: '/subscribe', idempotent: true, signal: o.signal, quoteBody: false });
    const items = listedItems(answer);
    const raw = answer.headers.date;
    const at = Date.parse(Array.isArray(raw) ? (raw[0] ?? '') : (raw ?? ''));
    return { items, ...(Number.isNaN(at) ? {} : { date: new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z') }) };
  }

  return {
    async createSubscription(req, o = {}) {
      const body = parseOrThrow(SubscribeRequestSchema, req, 'subscription request');
      remember(body.auth);
      const text = JSON.stringify(body);
      const policy = http.policy;
      // Attempts made so far, the HTTP layer's own repeats included: the whole call stays within CBP_HTTP_RETRIES.
      let used = 0;
      for (;;) {
        try {
          // Not idempotent (a second POST may create a second subscription): the HTTP layer repeats it only
          // when the service surely did not act (429, 503, a connection never made).
          const answer = await send({ operation: 'create subscription', method: 'POST', path: '/subscribe', body: text, idempotent: false, signal: o.signal });
          return http.parse(SubscriptionSchema, answer, 'create subscription');
        } catch (e) {
          if (!(e instanceof ServiceError)) throw e;
          used += typeof e.details.attempts === 'number' ? e.details.attempts : 1;
          if (!e.retryable || repeatedBelow(e) || used > policy.retries) throw e;
          // A 500, 502, 504, timeout or broken connection after sending: the service may have created it.
          // Look first, and ask again only when it did not, so a retry never makes a second subscription.
          await policy.sleep(backoffDelay(policy, used - 1, e.retryAfterMs), o.signal);
          const made = (await listItems(o)).items.find((s) => s.url === body.url && s.event_type === body.event_type && s.email === body.email);
          if (made) return made.subscription();
        }
      }
    },
    listSubscriptions: async (o) => (await listItems(o)).items.map((s) => s.subscription()),
    listSubscriptionItems: (o) => listItems(o),
    getSubscription: async (guid, o) => get('get subscription', `/subscribe/${seg(guidArg(guid, 'subscription guid'))}`, SubscriptionSchema, o),
    async updateSubscription(guid, update, o = {}) {
      const g = guidArg(guid, 'subscription guid');
      const body = parseOrThrow(SubscriptionUpdateSchema, update, 'subscription update');
      remember(body.auth);
      const answer = await send({
        operation: 'update subscription',
        method: 'PUT',
        path: `/subscribe/${seg(g)}`,
        body: JSON.stringify(body),
        idempotent: true,
        signal: o.signal,
      });
      return http.parse(SubscriptionSchema, answer, 'update subscription');
    },
    async deleteSubscription(guid, o = {}) {
      const g = guidArg(guid, 'subscription guid');
      const path = `/subscribe/${seg(g)}`;
      const call = { operation: 'delete subscription', method: 'DELETE' as const, path, idempotent: true, signal: o.signal };
      // The answer body is not shown: any text is accepted, parsed as JSON when it is JSON.
      return withToken(o.signal, (headers) =>
        http.run({ ...call, headers }, async (res) => {
          const text = await res.body.text();
          let body: unknown = text.trim() === '' ? undefined : text;
          try {
            if (body !== undefined) body = JSON.parse(text);
          } catch {
            // kept as text
          }
          return { status: res.statusCode, body };
        }),
      );
    },
    ping: async (eventType, o) =>
      get('ping', `/ping/${seg(parseOrThrow(SubscribableEventTypeSchema, eventType, 'ping event type'))}`, PingResponseSchema, o),
    getChargeback: async (guid, o) => get('get chargeback', `/chargeback/${seg(guidArg(guid, 'chargeback guid'))}`, ChargebackSchema, o),
    getPrevention: async (guid, o) => get('get prevention alert', `/prevention/${seg(guidArg(guid, 'prevention guid'))}`, PreventionAlertSchema, o),
    getOrderValidation: async (guid, o) =>
      get('get order validation', `/order_validation/${seg(guidArg(guid, 'order validation guid'))}`, OrderValidationSchema, o),
    getOrder: async (guid, o) => get('get order', `/order/${seg(guidArg(guid, 'order guid'))}`, OrderSchema, o),
    close: () => http.close(),
  };
}
