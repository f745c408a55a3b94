// Turns zod issues into messages that name the field, the value received and what was expected.
import type { z } from 'zod';

function valueAt(input: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let v: unknown = input;
  for (const k of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

function show(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

export function formatIssues(error: z.ZodError, input: unknown): string[] {
  return error.issues.map((i) => {
    const field = i.path.length ? i.path.map(String).join('.') : '(the whole value)';
    const got = 'input' in i && i.input !== undefined ? i.input : valueAt(input, i.path);
    const expected = i.message.replace(/^Invalid input: /, '');
    return `${field}: got ${show(got)}; ${expected}`;
  });
}

export type ParseResult<T> = { ok: true; value: T } | { ok: false; issues: string[] };

export function safeParseWith<S extends z.ZodType>(schema: S, input: unknown): ParseResult<z.infer<S>> {
  const r = schema.safeParse(input);
  return r.success ? { ok: true, value: r.data } : { ok: false, issues: formatIssues(r.error, input) };
}
