// Module hooks (node:module register) that append every URL an ESM import resolves to a file: see
// import-trace.ts. Run in Node's hooks thread, so they write to a file, not to the process's streams.
import { appendFileSync } from 'node:fs';

let file;

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  if (file) appendFileSync(file, `${r.url}\n`);
  return r;
}
