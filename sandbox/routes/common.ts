// Helpers shared by the interfaces' routes: the error body every interface answers ({error: true,
// message}), Authorization header parsing, the JSON-only rule, and schema validation naming fields.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { safeParseWith } from '../../contract/index.ts';

export function fail(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply.code(status).type('application/json').send({ error: true, message });
}

export type BearerResult = { ok: true; value: string } | { ok: false; problem: 'missing' | 'malformed' };

/** Reads `Authorization: Bearer <value>`. */
export function bearer(req: FastifyRequest): BearerResult {
  const h = req.headers.authorization;
  if (h === undefined || h.trim() === '') return { ok: false, problem: 'missing' };
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? { ok: true, value: m[1] } : { ok: false, problem: 'malformed' };
}

export function isJson(req: FastifyRequest): boolean {
  const ct = req.headers['content-type'];
  return typeof ct === 'string' && /^application\/json\s*(;|$)/i.test(ct.trim());
}

/** The raw body was kept for a non-JSON content type (see the catch-all parser in server.ts). */
export const JSON_ONLY = 'Content-Type must be application/json; this interface accepts JSON bodies only';

export function validate<S extends z.ZodType>(
  schema: S,
  body: unknown,
  what: string,
): { ok: true; value: z.infer<S> } | { ok: false; message: string } {
  const r = safeParseWith(schema, body);
  if (r.ok) return { ok: true, value: r.value };
  return { ok: false, message: `${what} is invalid: ${r.issues.join('; ')}` };
}
