// The order data interface: POST {dataBaseUrl}/auth {username, password} → {authorization_key}, then
// POST {dataBaseUrl}/order with the key as bearer. The key does not expire by default: it is cached, and
// renewed only when a push is answered 401 (that push is then sent once more).
import {
  DataAuthResponseSchema,
  MerchantOrderSchema,
  OrderPushResponseSchema,
  type MerchantOrderInput,
  type OrderPushResponse,
} from '../contract/index.ts';
import { registerSecrets } from '../lib/log.ts';
import { parseOrThrow } from '../lib/validate.ts';
import { ServiceHttpError } from './errors.ts';
import { bearer, ServiceHttp, untilAborted, type ClientOptions } from './http.ts';

export interface OrderDataClientConfig {
  dataBaseUrl: string;
  dataUsername: string;
  dataPassword: string;
}

export interface OrderDataClient {
  /** The authorization key, from the cache or POST /auth. */
  getKey(o?: { signal?: AbortSignal }): Promise<string>;
  /** Drops the cached key if it is this one. */
  invalidateKey(key?: string): void;
  /** Creates or updates an order (validated with MerchantOrderSchema) → the service's internal id. */
  pushOrder(order: MerchantOrderInput, o?: { signal?: AbortSignal }): Promise<OrderPushResponse>;
  close(): Promise<void>;
}

export function createOrderDataClient(cfg: OrderDataClientConfig, opts: ClientOptions = {}): OrderDataClient {
  registerSecrets([cfg.dataPassword]);
  let key: string | undefined;
  let inFlight: Promise<string> | undefined;
  const http = new ServiceHttp('data', cfg.dataBaseUrl, { ...opts, secrets: () => [cfg.dataPassword, key] });

  async function fetchKey(): Promise<string> {
    const answer = await http.json({
      operation: 'get key',
      method: 'POST',
      path: '/auth',
      body: JSON.stringify({ username: cfg.dataUsername, password: cfg.dataPassword }),
      // A second POST /auth only returns a fresh key: safe to retry.
      idempotent: true,
    });
    const { authorization_key } = http.parse(DataAuthResponseSchema, answer, 'get key');
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
            operation: 'push order',
            method: 'POST',
            path: '/order',
            headers: bearer(k),
            body,
            // POST /order creates or updates by order_id: sending the same order twice leaves one order.
            idempotent: true,
            signal: o.signal,
          }),
          'push order',
        );
      const k = await client.getKey(o);
      try {
        return await push(k);
      } catch (e) {
        if (!(e instanceof ServiceHttpError) || e.httpStatus !== 401) throw e;
        client.invalidateKey(k);
        return push(await client.getKey(o));
      }
    },
    close: () => http.close(),
  };
  return client;
}
