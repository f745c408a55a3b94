// The events interface: subscriptions (create, list, get, update, delete), ping, and the four lookups.
// Every request carries a token from the token interface: 400 for a missing or malformed Authorization
// header, 401 for a token that is not valid or has expired.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  SUBSCRIBABLE_EVENT_TYPES,
  SubscribeRequestSchema,
  SubscriptionUpdateSchema,
  type SubscribableEventType,
} from '../../contract/index.ts';
import { sendToWebhook, webhookUrlProblem } from '../delivery.ts';
import { orderBrand, orderMid } from '../matching.ts';
import { chargebackResource, orderResource, orderValidationResource, preventionResource } from '../payloads.ts';
import { confirmation, isKnown, newGuid, issueGuid, sendMail, type SandboxState, type StoredSubscription } from '../state.ts';
import { startVetting } from '../vetting.ts';
import { bearer, fail, validate } from './common.ts';

export function tokenGuard(state: SandboxState) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    let b = bearer(req);
    // "Header Authorization carrying the bearer token" reads two ways: a bare JWT (no scheme) is accepted too.
    const raw = req.headers.authorization?.trim();
    if (!b.ok && raw && /^[\w-]+\.[\w-]+\.[\w-]+$/.test(raw)) b = { ok: true, value: raw };
    if (!b.ok) {
      return fail(
        reply,
        400,
        b.problem === 'missing'
          ? 'missing Authorization header: send Authorization: Bearer <token from the token interface>'
          : 'malformed Authorization header: expected Bearer <token>',
      );
    }
    const v = state.jwt.verify(b.value);
    if (!v.ok) return fail(reply, 401, `invalid authorization header: ${v.reason}`);
  };
}

const isSubscribable = (t: string): t is SubscribableEventType => (SUBSCRIBABLE_EVENT_TYPES as readonly string[]).includes(t);

/** GET /ping/{event_type}: answers the urls of every subscription of the type and sends each a test delivery. */
export function pingHandler(state: SandboxState) {
  return async (req: FastifyRequest<{ Params: { event_type: string } }>, reply: FastifyReply) => {
    const type = req.params.event_type;
    if (!isSubscribable(type)) {
      return fail(reply, 400, `event_type ${JSON.stringify(type)} is not one of the subscribable types (${SUBSCRIBABLE_EVENT_TYPES.join(', ')})`);
    }
    const subs = [...state.subscriptions.values()].filter((s) => s.event_type === type);
    const urls = [...new Set(subs.map((s) => s.url))];
    const at = state.clock.nowIso();
    await Promise.all(
      subs.map(async (s) => {
        const body = { event_guid: s.guid, event_type: 'registration.new', subscribed_event_type: s.event_type, event_timestamp: at };
        const res = await sendToWebhook(s, 'POST', body, state.deliveryTimeoutMs);
        state.deliveries.push({
          event_guid: s.guid, event_type: 'registration.new', subscription_guid: s.guid, url: s.url, method: 'POST',
          attempt: 1, time: at, ...res, outcome: 'ping (test delivery, not re-sent)',
        });
      }),
    );
    return reply.send({ urls });
  };
}

function notFound(reply: FastifyReply, what: string, guid: string) {
  return fail(reply, 404, `${what} ${JSON.stringify(guid)} does not exist`);
}

export function eventsRoutes(state: SandboxState) {
  return async function (app: FastifyInstance): Promise<void> {
    app.addHook('preHandler', tokenGuard(state));
    // The simulated clock in Date (as the real service's own clock would be): clients judge vetting age by it.
    app.addHook('onSend', async (_req, reply) => void reply.header('date', new Date(state.clock.now()).toUTCString()));

    app.post('/subscribe', async (req, reply) => {
      const v = validate(SubscribeRequestSchema, req.body, 'subscribe request');
      if (!v.ok) return fail(reply, 400, v.message);
      const problem = webhookUrlProblem(v.value.url);
      if (problem) return fail(reply, 400, problem);
      const now = state.clock.nowIso();
      const sub: StoredSubscription = {
        guid: issueGuid(state, state.world.seed, 'sub', v.value.event_type),
        email: v.value.email,
        url: v.value.url,
        event_type: v.value.event_type,
        active: false,
        created_at: now,
        updated_at: now,
        auth: { username: v.value.auth.username, password: v.value.auth.password },
        vetting: 'pending',
        vettingAttempts: 0,
      };
      state.subscriptions.set(sub.guid, sub);
      // The confirmation shows the subscription as created (active=false), before the vetting test runs.
      const answer = confirmation(sub);
      await startVetting(state, sub);
      return reply.send(answer);
    });

    app.get('/subscribe', async (_req, reply) => reply.send([...[...state.subscriptions.values()].map(confirmation), ...state.plantedSubscriptions]));

    app.get<{ Params: { guid: string } }>('/subscribe/:guid', async (req, reply) => {
      const s = state.subscriptions.get(req.params.guid);
      return s ? reply.send(confirmation(s)) : notFound(reply, 'subscription', req.params.guid);
    });

    // The update's method is "not shown": PUT (service-notes' reading) and, for clients reading it otherwise,
    // PATCH and POST on the same path do the same.
    app.route<{ Params: { guid: string } }>({ method: ['PUT', 'PATCH', 'POST'], url: '/subscribe/:guid', handler: async (req, reply) => {
      const s = state.subscriptions.get(req.params.guid);
      if (!s) return notFound(reply, 'subscription', req.params.guid);
      const body = req.body as Record<string, unknown> | undefined;
      if (body && typeof body === 'object' && 'event_type' in body && body.event_type !== s.event_type) {
        return fail(
          reply,
          400,
          `event_type cannot be changed by an update (it is ${s.event_type}): delete the subscription and create a new one for ${JSON.stringify(body.event_type)}`,
        );
      }
      const v = validate(SubscriptionUpdateSchema, body, 'subscription update');
      if (!v.ok) return fail(reply, 400, v.message);
      // The spec: a subscription whose vetting failed is resolvable only by deleting it and creating a new one.
      // Refused before anything applies; the table's "inactive -> update active=true -> active" still holds
      // for one switched off after vetting (or still being vetted).
      if (v.value.active === true && !s.active && s.vetting === 'failed') {
        return fail(
          reply,
          400,
          `subscription ${s.guid} cannot be activated: its vetting failed (the webhook never answered the registration test); ` +
            'delete the subscription and create a new one',
        );
      }
      if (v.value.url !== undefined) {
        const problem = webhookUrlProblem(v.value.url);
        if (problem) return fail(reply, 400, problem);
        s.url = v.value.url;
      }
      if (v.value.email !== undefined) s.email = v.value.email;
      if (v.value.auth !== undefined) s.auth = { username: v.value.auth.username, password: v.value.auth.password };
      if (v.value.active !== undefined) s.active = v.value.active;
      s.updated_at = state.clock.nowIso();
      sendMail(state, s.email, `Subscription ${s.guid} (${s.event_type}) changed`, `The subscription now pushes to ${s.url} and is ${s.active ? 'active' : 'inactive'}.`);
      return reply.send(confirmation(s));
    } });

    app.delete<{ Params: { guid: string } }>('/subscribe/:guid', async (req, reply) => {
      const s = state.subscriptions.get(req.params.guid);
      if (!s) return notFound(reply, 'subscription', req.params.guid);
      state.subscriptions.delete(s.guid);
      sendMail(state, s.email, `Subscription ${s.guid} (${s.event_type}) deleted`, `Events are no longer pushed to ${s.url}.`);
      return reply.send({ error: false, message: 'subscription deleted', guid: s.guid });
    });

    app.get('/ping/:event_type', pingHandler(state));

    app.get<{ Params: { guid: string } }>('/chargeback/:guid', async (req, reply) => {
      const c = state.chargebacks.get(req.params.guid);
      if (!c || !isKnown(state, c.received_at)) return notFound(reply, 'chargeback', req.params.guid);
      return reply.send(chargebackResource(c, state.matches.get(c.chargeback_guid)));
    });

    app.get<{ Params: { guid: string } }>('/prevention/:guid', async (req, reply) => {
      const a = state.alerts.get(req.params.guid);
      if (!a || !isKnown(state, a.prevention_at)) return notFound(reply, 'prevention alert', req.params.guid);
      return reply.send(preventionResource(a, state.matches.get(a.prevention_guid)));
    });

    app.get<{ Params: { guid: string } }>('/order_validation/:guid', async (req, reply) => {
      const o = state.orderValidations.get(req.params.guid);
      if (!o || !isKnown(state, o.received_at)) return notFound(reply, 'order validation request', req.params.guid);
      return reply.send(orderValidationResource(o, state.matches.get(o.order_validation_guid)));
    });

    app.get<{ Params: { guid: string } }>('/order/:guid', async (req, reply) => {
      const o = state.ordersByGuid.get(req.params.guid);
      if (!o) return notFound(reply, 'order', req.params.guid);
      return reply.send(orderResource(o, orderMid(state, o), orderBrand(o)));
    });
  };
}
