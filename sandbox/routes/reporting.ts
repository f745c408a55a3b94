// The reporting interface: POST /chargebacks, /prevention, /mid_report with the spec's body. The Bearer
// reporting key and the body's company_token are both checked (401 for either). The body is streamed
// from the world as known at the sandbox clock's now; no data for valid parameters is an empty 200.
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { REPORT_KINDS, ReportRequestSchema, type ReportKind } from '../../contract/index.ts';
import { matchOfAt } from '../matching.ts';
import { renderReport } from '../reports.ts';
import type { SandboxState } from '../state.ts';
import { sameSecret } from '../../lib/secrets.ts';
import { JSON_ONLY, bearer, fail, isJson, validate } from './common.ts';

/**
 * Yields nothing at all when the report has no records, so "no data" is an empty body: a JSON body that
 * is only `[]`, or a CSV body that is only its header line, is held back. Otherwise streams as it comes.
 */
async function* nonEmpty(chunks: AsyncIterable<string>, format: 'JSON' | 'CSV'): AsyncGenerator<string> {
  const it = chunks[Symbol.asyncIterator]();
  let head = '';
  const hasRecord = (s: string) =>
    format === 'JSON' ? s.replace(/\s+/g, '').replace(/^\[/, '') !== '' && s.replace(/\s+/g, '') !== '[]' : s.trim().split('\n').length > 1;
  for (;;) {
    const r = await it.next();
    if (r.done) {
      if (hasRecord(head)) yield head;
      return;
    }
    head += r.value;
    // A JSON record has begun once something follows the opening bracket; a CSV one after the header line.
    const begun = format === 'JSON' ? /^\s*\[\s*[^\s\]]/.test(head) || /^\s*[^\s[]/.test(head) : /\n[^\n]*\S/.test(head);
    if (begun) break;
  }
  yield head;
  for (;;) {
    const r = await it.next();
    if (r.done) return;
    yield r.value;
  }
}

/** mids and output_format are optional: sent as null (or an empty format) they read as left out. */
function optionalsOmitted(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  const b = { ...(body as Record<string, unknown>) };
  if (b.mids === null) delete b.mids;
  if (b.output_format === null || (typeof b.output_format === 'string' && b.output_format.trim() === '')) delete b.output_format;
  return b;
}

export function reportingRoutes(state: SandboxState) {
  return async function (app: FastifyInstance): Promise<void> {
    for (const kind of REPORT_KINDS) {
      app.post(`/${kind}`, async (req, reply) => {
        if (!isJson(req)) return fail(reply, 400, JSON_ONLY);
        const b = bearer(req);
        if (!b.ok || !sameSecret(b.value, state.credentials.reportingKey)) {
          return fail(reply, 401, b.ok ? 'invalid reporting key' : `${b.problem} Authorization header: send Authorization: Bearer <reporting key>`);
        }
        const v = validate(ReportRequestSchema, optionalsOmitted(req.body), 'report request');
        if (!v.ok) return fail(reply, 400, v.message);
        if (!sameSecret(v.value.company_token, state.credentials.companyToken)) return fail(reply, 401, 'invalid company_token');
        const format = v.value.output_format ?? 'JSON';
        const now = state.clock.nowIso();
        const matchOf = matchOfAt(state, now);
        let chunks: AsyncIterable<string>;
        try {
          chunks = renderReport(
            state.world,
            {
              kind: kind as ReportKind,
              start: v.value.start_date,
              end: v.value.end_date,
              ...(v.value.mids ? { mids: v.value.mids } : {}),
              now,
              matchOf: (_kind, guid) => matchOf(guid),
            },
            format,
          );
        } catch (e) {
          return fail(reply, 400, `report request is invalid: ${(e as Error).message}`);
        }
        reply.code(200).type(format === 'CSV' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8');
        return reply.send(Readable.from(nonEmpty(chunks, format)));
      });
    }
  };
}
