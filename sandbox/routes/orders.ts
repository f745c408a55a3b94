// The order data interface (served under /orders/v1 and /orders/stage, one store): POST /auth exchanges
// username and password for a fresh, non-expiring key; POST /order creates or updates an order by its
// order_id and answers {id}. JSON only (400 otherwise); 401 without a valid key; 422 naming invalid fields.
import type { FastifyInstance } from 'fastify';
import { DataAuthRequestSchema, MerchantOrderSchema, ORDER_CREATE_FIELDS, formatIssues } from '../../contract/index.ts';
import { matchPushedOrder } from '../matching.ts';
import { newGuid, issueGuid, type SandboxState, type StoredOrder } from '../state.ts';
import { sameSecret } from '../../lib/secrets.ts';
import { JSON_ONLY, bearer, fail, isJson, validate } from './common.ts';

export function ordersRoutes(state: SandboxState) {
  return async function (app: FastifyInstance): Promise<void> {
    app.addHook('preHandler', async (req, reply) => {
      if (req.method === 'POST' && !isJson(req)) return fail(reply, 400, JSON_ONLY);
    });

    app.post('/auth', async (req, reply) => {
      const v = validate(DataAuthRequestSchema, req.body, 'auth request');
      if (!v.ok) return fail(reply, 400, v.message);
      const okUser = sameSecret(v.value.username, state.credentials.dataUsername);
      const okPass = sameSecret(v.value.password, state.credentials.dataPassword);
      if (!okUser || !okPass) return fail(reply, 401, 'invalid username or password');
      const key = newGuid('key');
      state.dataKeys.add(key);
      return reply.send({ authorization_key: key });
    });

    app.post('/order', async (req, reply) => {
      const b = bearer(req);
      if (!b.ok || !state.dataKeys.has(b.value)) {
        return fail(
          reply,
          401,
          !b.ok
            ? `${b.problem} Authorization header: send Authorization: Bearer <authorization_key from POST /auth>`
            : 'invalid authorization key: request one with POST /auth',
        );
      }
      const body = req.body;
      if (body === null || typeof body !== 'object' || Array.isArray(body)) {
        return fail(reply, 400, 'the body must be a JSON object: the merchant order');
      }
      const r = MerchantOrderSchema.safeParse(body);
      if (!r.success) return fail(reply, 422, `order is invalid: ${formatIssues(r.error, body).join('; ')}`);
      const order = r.data as Record<string, unknown> & { order_id: string };
      const existing = state.orders.get(order.order_id);
      if (!existing) {
        const missing = ORDER_CREATE_FIELDS.filter((f) => order[f] === undefined);
        if (missing.length) {
          return fail(
            reply,
            422,
            `order is invalid: ${missing.map((f) => `${f}: got nothing; expected on the first push of order ${order.order_id}`).join('; ')}`,
          );
        }
      }
      const now = state.clock.nowIso();
      let stored: StoredOrder;
      if (existing) {
        const fields: Record<string, unknown> = { ...existing.fields };
        for (const [k, val] of Object.entries(order)) if (val !== undefined) fields[k] = val;
        existing.fields = fields;
        existing.updated_at = now;
        stored = existing;
      } else {
        const fields: Record<string, unknown> = {};
        for (const [k, val] of Object.entries(order)) if (val !== undefined) fields[k] = val;
        stored = { id: issueGuid(state, state.world.seed, 'ord', order.order_id), order_id: order.order_id, fields, created_at: now, updated_at: now };
        state.orders.set(stored.order_id, stored);
        state.ordersByGuid.set(stored.id, stored);
      }
      if (matchPushedOrder(state, stored) > 0) {
        // The .match events are recorded now; their deliveries run in the background (clock calls await them).
        void state.clock.drain().catch(() => undefined);
      }
      return reply.send({ id: stored.id });
    });
  };
}
