// The order data interface: POST {dataBaseUrl}/auth {username, password} → {authorization_key}, then
// POST {dataBaseUrl}/order with the key as bearer. The key does not expire by default: it is cached, and
// renewed only when a push is answered 401 (that push is then sent once more).
//
// Every error says which request failed. Only the answer to an order's own POST /order can refuse that
// order (isOrderRefusal); a key that cannot be had (POST /auth answered 4xx) or that is refused again right
// after renewal is a DataKeyError: no order's fault, and the run must stop, not mark orders rejected.
import {
  DataAuthResponseSchema,
  MerchantOrderSchema,
  OrderPushResponseSchema,
  type MerchantOrderInput,
  type OrderPushResponse,
} from '../contract/index.ts';
import { registerSecrets } from '../lib/log.ts';
import { parseOrThrow } from '../lib/validate.ts';
import { ValidationError } from '../lib/errors.ts';
import { INTERFACE_SETTINGS, ServiceError, ServiceHttpError } from './errors.ts';
import { bearer, ServiceHttp, untilAborted, type ClientOptions } from './http.ts';

export interface OrderDataClientConfig {
  dataBaseUrl: string;
  dataUsername: string;
  dataPassword: string;
}

export interface OrderDataClient {
  /** The authorization key, from the cache or POST /auth. Throws DataKeyError when POST /auth answers 4xx. */
  getKey(o?: { signal?: AbortSignal }): Promise<string>;
  /** Drops the cached key if it is this one. */
  invalidateKey(key?: string): void;
  /** Creates or updates an order (validated with MerchantOrderSchema) → the service's internal id. */
  pushOrder(order: MerchantOrderInput, o?: { signal?: AbortSignal }): Promise<OrderPushResponse>;
  close(): Promise<void>;
}

/** The operations, as errors name them: what was done and which request did it. */
export const GET_KEY = 'get key (POST /auth)';
export const PUSH_ORDER = 'push order (POST /order)';

/**
 * No usable authorization key: POST /auth answered 4xx (400 bad parameters, 401 wrong credentials, 403 not
 * allow-listed, ...), or POST /order refused a key just issued. Not retryable: the credentials, the base
 * URL or the operator's allow-list must change. Never an order's rejection.
 */
export class DataKeyError extends ServiceError {
  constructor(cause: ServiceHttpError, when: 'auth' | 'fresh key refused') {
    const env = INTERFACE_SETTINGS.data;
    const what =
      when === 'auth'
        ? `the order data interface gave no authorization key: POST /auth failed with HTTP ${cause.httpStatus}`
        : `the order data interface refused a key it had just issued: POST /order failed with HTTP ${cause.httpStatus} twice, before and after a fresh POST /auth`;
    super(
      'CBP_ERR_DATA_KEY',
      `${what}${cause.serviceMessage ? ` (${cause.serviceMessage})` : ''}. No order was pushed or marked rejected because of it. ` +
        `Check ${env.credentialEnv}, ${env.baseUrlEnv}, and that this machine's IP address is allow-listed for the order data interface by the service operator; then run again`,
      { iface: 'data', operation: when === 'auth' ? GET_KEY : PUSH_ORDER, httpStatus: cause.httpStatus, serviceMessage: cause.serviceMessage, cause, details: { request: when === 'auth' ? 'POST /auth' : 'POST /order' } },
      cause.httpStatus === 403 ? 403 : 401,
    );
  }
}

/**
 * The service's refusal of one order: its own POST /order answered 400 or 422, or the client's check before
 * sending found what the service would answer 422 for. Anything else (a key failure, 401 after renewal, 412,
 * 5xx, a timeout) is not the order's fault and is not a refusal.
 */
export function isOrderRefusal(e: unknown): { status: number; message: string } | undefined {
  if (e instanceof ServiceHttpError && e.iface === 'data' && e.operation === PUSH_ORDER && (e.httpStatus === 400 || e.httpStatus === 422)) {
    return { status: e.httpStatus, message: e.serviceMessage ?? e.message };
  }
  if (e instanceof ValidationError) return { status: 422, message: e.issues.join('; ') };
  return undefined;
}

export function createOrderDataClient(cfg: OrderDataClientConfig, opts: ClientOptions = {}): OrderDataClient {
  registerSecrets([cfg.dataPassword]);
  let key: string | undefined;
  let inFlight: Promise<string> | undefined;
  const http = new ServiceHttp('data', cfg.dataBaseUrl, { ...opts, secrets: () => [cfg.dataPassword, key] });

  async function fetchKey(): Promise<string> {
    let answer;
    try {
      answer = await http.json({
        operation: GET_KEY,
        method: 'POST',
        path: '/auth',
        body: JSON.stringify({ username: cfg.dataUsername, password: cfg.dataPassword }),
        // A second POST /auth only returns a fresh key: safe to retry.
        idempotent: true,
      });
    } catch (e) {
      // 5xx, 429, timeouts and network errors stay what they are (retryable, named "get key (POST /auth)").
      if (e instanceof ServiceHttpError && (e.httpStatus ?? 0) >= 400 && (e.httpStatus ?? 0) < 500 && e.httpStatus !== 429) throw new DataKeyError(e, 'auth');
      throw e;
    }
    const { authorization_key } = http.parse(DataAuthResponseSchema, answer, GET_KEY);
    // The key lives for the whole process and is rarely renewed: registering it globally keeps it out of every log line.
    registerSecrets([authorization_key]);
    key = authorization_key;
    return authorization_key;
  }

  const client: OrderDataClient = {
    async getKey(o = {}) {
      if (key !== undefined) return key;
      inFlight ??= fetchKey().finally(() => {
        inFlight = undefined;
      });
      return untilAborted(inFlight, o.signal);
    },
    invalidateKey(k) {
      if (k === undefined || key === k) key = undefined;
    },
    async pushOrder(order, o = {}) {
      const body = JSON.stringify(parseOrThrow(MerchantOrderSchema, order, 'merchant order'));
      const push = async (k: string) =>
        http.parse(
          OrderPushResponseSchema,
          await http.json({
            operation: PUSH_ORDER,
            method: 'POST',
            path: '/order',
            headers: bearer(k),
            body,
            // POST /order creates or updates by order_id: sending the same order twice leaves one order.
            idempotent: true,
            signal: o.signal,
          }),
          PUSH_ORDER,
        );
      const k = await client.getKey(o);
      try {
        return await push(k);
      } catch (e) {
        if (!(e instanceof ServiceHttpError) || e.httpStatus !== 401) throw e;
        // The key may have been revoked or expired: one fresh key, one more try.
        client.invalidateKey(k);
        const fresh = await client.getKey(o);
        try {
          return await push(fresh);
        } catch (e2) {
          if (e2 instanceof ServiceHttpError && e2.httpStatus === 401) throw new DataKeyError(e2, 'fresh key refused');
          throw e2;
        }
      }
    },
    close: () => http.close(),
  };
  return client;
}
