// Turns zod issues into messages that name the field, the value received and what was expected.
import type { z } from 'zod';

const MISSING = Symbol('missing');

function valueAt(input: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let v: unknown = input;
  for (const k of path) {
    if (v === null || typeof v !== 'object' || !(k in (v as object))) return MISSING;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

// Credentials can sit in payloads (webhook auth, data auth, token answers); an error message must not
// repeat them, so a value under one of these field names is shown as hidden.
const SECRET_FIELDS = new Set([
  'password', 'token', 'authorization', 'authorization_key', 'api_secret', 'apisecret', 'secret', 'company_token',
  'companytoken', 'reporting_key', 'reportingkey',
]);

function show(v: unknown): string {
  if (v === undefined || v === MISSING) return 'nothing';
  // An object shown whole (a refine on it, a wrong type) may hold credentials further down.
  const s = JSON.stringify(v, (k, x) => (k && SECRET_FIELDS.has(k.toLowerCase()) && x !== undefined ? '(hidden)' : x));
  return s === undefined ? String(v) : s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/**
 * One message per issue: `<field path>: got <value>; <expectation>`. The value is looked up in the original
 * input (what the sender wrote, before any normalising transform); where the path does not exist there
 * (a CSV row folded into nested objects), the value zod saw is used. formatIssues needs the original input.
 */
export function formatIssues(error: z.ZodError, input: unknown): string[] {
  return error.issues.map((i) => {
    const field = i.path.length ? i.path.map(String).join('.') : '(the whole value)';
    const last = i.path.length ? String(i.path[i.path.length - 1]).toLowerCase() : '';
    const original = valueAt(input, i.path);
    // A key absent from an object that exists is simply missing; only a path that breaks higher up (one
    // that exists after a preprocess step) takes the value zod saw.
    const parentExists = i.path.length === 0 || valueAt(input, i.path.slice(0, -1)) !== MISSING;
    const got = original !== MISSING ? original : !parentExists && 'input' in i ? i.input : undefined;
    const expected = i.message.replace(/^Invalid input: /, '');
    const shown = SECRET_FIELDS.has(last) && got !== undefined && got !== MISSING ? '(hidden)' : show(got);
    return `${field}: got ${shown}; ${expected}`;
  });
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; issues: string[] };

/** What kind of value was given, never the value: `nothing`, `null`, `a string`, `an array`... */
function kindOf(v: unknown): string {
  if (v === undefined || v === MISSING) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  const t = typeof v;
  return t === 'object' ? 'an object' : t === 'undefined' ? 'nothing' : `a ${t}`;
}

/**
 * Like formatIssues, but of the value only its kind: `<field path>: <expectation> (got a string)`. For input
 * that is not cbp's to repeat, where any field may hold a credential under any name (another consumer's
 * subscription in a list the service shares). Contract messages that quote their input lose that part.
 */
export function formatIssuesWithoutValues(error: z.ZodError, input: unknown): string[] {
  return error.issues.map((i) => {
    const field = i.path.length ? i.path.map(String).join('.') : '(the whole value)';
    const expected =
      i.code === 'invalid_type'
        ? `expected ${i.expected}`
        : i.code === 'invalid_value'
          ? `expected one of ${i.values.map((v) => String(v)).join(', ')}`
          : i.message.replace(/^Invalid input: /, '').replace(/,?\s*\bgot\b[\s\S]*$/, '');
    return `${field}: ${expected} (got ${kindOf(valueAt(input, i.path))})`;
  });
}

/** safeParseWith whose issues name fields and expectations but never a value (formatIssuesWithoutValues). */
export function safeParseWithoutValues<S extends z.ZodType>(schema: S, input: unknown): ParseResult<z.infer<S>> {
  const r = schema.safeParse(input);
  return r.success ? { ok: true, value: r.data } : { ok: false, issues: formatIssuesWithoutValues(r.error, input) };
}

export function safeParseWith<S extends z.ZodType>(schema: S, input: unknown): ParseResult<z.infer<S>> {
  // reportInput keeps each issue's value, needed where the path exists only after a preprocess step.
  const r = schema.safeParse(input, { reportInput: true });
  return r.success ? { ok: true, value: r.data } : { ok: false, issues: formatIssues(r.error, input) };
}
