import type { z } from 'zod';
import { safeParseWith } from '../contract/issues.ts';
import { ValidationError } from './errors.ts';

/** Parses input with a contract schema or throws a ValidationError naming each field, value and expectation. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, what: string): z.infer<S> {
  const r = safeParseWith(schema, input);
  if (r.ok) return r.value;
  throw new ValidationError(what, r.issues);
}
