// Administration of the sandbox under /_sandbox (no credentials, no faults): the clock, faults, the
// e-mail outbox, the events emitted and every delivery attempt. Reads first wait for work under way
// (deliveries started by an order push, a clock move in progress), so what they show is settled.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { toIsoUtc } from '../../contract/index.ts';
import { isoSeconds, parseDuration } from '../clock.ts';
import { FaultsConfigSchema } from '../faults.ts';
import { resetState, type SandboxState } from '../state.ts';
import { scheduleWorld } from '../timeline.ts';
import { fail, validate } from './common.ts';

const ClockMoveSchema = z.union([
  z.strictObject({ advance: z.string().min(1, 'expected an ISO 8601 duration such as P3D or PT2H') }),
  z.strictObject({ to: z.string().min(1, 'expected an ISO 8601 UTC date-time') }),
]);

export const ADMIN_ROUTES = [
  { method: 'GET', path: '/_sandbox', what: 'this index' },
  { method: 'GET', path: '/_sandbox/clock', what: 'the sandbox clock: {now, start, realtime}' },
  { method: 'POST', path: '/_sandbox/clock', what: '{"advance": "P3D"} or {"to": "<ISO date-time>"}: moves the clock forward; everything due in between happens, in order, before the answer' },
  { method: 'GET', path: '/_sandbox/faults', what: 'the fault configuration and how many faults were injected' },
  { method: 'POST', path: '/_sandbox/faults', what: 'replaces the fault configuration (see docs/sandbox.md)' },
  { method: 'DELETE', path: '/_sandbox/faults', what: 'clears every fault' },
  { method: 'GET', path: '/_sandbox/outbox', what: 'e-mails the service sent: [{to, subject, body, at}]' },
  { method: 'GET', path: '/_sandbox/events', what: 'events emitted so far (payloads as delivered); ?type= filters' },
  { method: 'GET', path: '/_sandbox/deliveries', what: 'every delivery attempt: event_guid, event_type, url, status or error, time, attempt, outcome' },
  { method: 'GET', path: '/_sandbox/subscriptions', what: 'subscriptions with their vetting state' },
  { method: 'POST', path: '/_sandbox/subscriptions', what: "plants another consumer's subscription as a real service might list it: any JSON object, appended to GET /subscribe as given (never vetted, delivered to, updated or deleted; reset forgets it)" },
  { method: 'GET', path: '/_sandbox/orders', what: 'orders pushed through the order data interface' },
  { method: 'POST', path: '/_sandbox/reset', what: 'forgets subscriptions, orders, keys, matches, e-mails, events, deliveries and faults; the clock goes back to its start' },
  { method: 'POST', path: '/_sandbox/settle', what: 'waits until deliveries under way have finished' },
] as const;

export function adminRoutes(state: SandboxState, opts: { realtime: () => boolean }) {
  return async function (app: FastifyInstance): Promise<void> {
    const clockView = () => ({ now: state.clock.nowIso(), start: isoSeconds(state.clock.startedAt), realtime: opts.realtime(), pending: state.clock.pending() });

    app.get('/', async () => ({ routes: ADMIN_ROUTES }));

    app.get('/clock', async () => {
      await state.clock.settle();
      return clockView();
    });

    app.post('/clock', async (req, reply) => {
      const v = validate(ClockMoveSchema, req.body, 'clock move');
      if (!v.ok) return fail(reply, 400, v.message);
      let target: number;
      if ('advance' in v.value) {
        const ms = parseDuration(v.value.advance);
        if (ms === undefined) return fail(reply, 400, `advance: got ${JSON.stringify(v.value.advance)}; expected an ISO 8601 duration such as P3D, PT2H, PT30M, P1W or P1DT12H`);
        target = state.clock.now() + ms;
      } else {
        const iso = toIsoUtc(v.value.to, true);
        if (!iso) return fail(reply, 400, `to: got ${JSON.stringify(v.value.to)}; expected an ISO 8601 UTC date-time such as 2026-01-05T00:00:00Z`);
        target = Date.parse(iso);
        if (target < state.clock.now()) return fail(reply, 400, `to: ${iso} is before the sandbox clock (${state.clock.nowIso()}); the clock never goes backwards`);
      }
      const eventsBefore = state.events.length;
      const deliveriesBefore = state.deliveries.length;
      const tasks = await state.clock.advanceTo(target);
      return { ...clockView(), tasks, events: state.events.length - eventsBefore, deliveries: state.deliveries.length - deliveriesBefore };
    });

    app.get('/faults', async () => state.faults.get());
    app.post('/faults', async (req, reply) => {
      const v = validate(FaultsConfigSchema, req.body ?? {}, 'fault configuration');
      if (!v.ok) return fail(reply, 400, v.message);
      state.faults.set(v.value);
      return state.faults.get();
    });
    app.delete('/faults', async () => {
      state.faults.clear();
      return state.faults.get();
    });

    app.get('/outbox', async () => {
      await state.clock.settle();
      return state.outbox;
    });
    app.get<{ Querystring: { type?: string } }>('/events', async (req) => {
      await state.clock.settle();
      const t = req.query.type;
      return state.events.filter((e) => !t || e.event_type === t).map((e) => e.payload);
    });
    app.get('/deliveries', async () => {
      await state.clock.settle();
      return state.deliveries;
    });
    app.get('/subscriptions', async () => [...state.subscriptions.values()]);
    app.post('/subscriptions', async (req, reply) => {
      const body = req.body;
      if (body === null || typeof body !== 'object' || Array.isArray(body)) return fail(reply, 400, 'expected a JSON object: the subscription as GET /subscribe should list it');
      state.plantedSubscriptions.push(body);
      return reply.code(201).send({ planted: state.plantedSubscriptions.length });
    });
    app.get('/orders', async () => [...state.orders.values()]);
    app.post('/reset', async () => {
      await state.clock.reset();
      resetState(state);
      scheduleWorld(state);
      return clockView();
    });
    app.post('/settle', async () => {
      await state.clock.settle();
      return clockView();
    });
  };
}
