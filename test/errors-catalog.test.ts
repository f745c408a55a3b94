// The error catalog (lib/errors.ts) is the one table of codes: every code in the tree is in it, every entry
// is raised by the class it names, the classes take status and retryable from it, the activities' retry
// policies derive their non-retryable types from it, and docs/errors.md shows it as it is.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RETRYABLE_STATUSES, ServiceHttpError, type ServiceInterface } from '../client/errors.ts';
import { CbpError, ConfigError, describeError, ERRORS, nonRetryableTypes, type ErrorCode, type ErrorDef } from '../lib/errors.ts';
import {
  NON_RETRYABLE_ERROR_TYPES,
  ORDER_ACTIVITY_OPTIONS,
  REPORT_ACTIVITY_OPTIONS,
  SERVICE_ACTIVITY_OPTIONS,
  STORE_ACTIVITY_OPTIONS,
} from '../workflows/activity-options.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SKIP = new Set(['node_modules', 'dist', 'data', 'coverage', '.git', '.tools', 'out']);
const THIS = path.join('test', 'errors-catalog.test.ts');

/** The project's own text files (sources, tests, SQL, docs), relative to the repo root. */
function treeFiles(dir = ''): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (!SKIP.has(e.name)) out.push(...treeFiles(rel));
    } else if (/\.(ts|js|mjs|cjs|sql|md)$/.test(e.name) && rel !== THIS) out.push(rel);
  }
  return out;
}

const FILES = treeFiles().map((f) => ({ file: f, text: fs.readFileSync(path.join(ROOT, f), 'utf8') }));
const SOURCES = FILES.filter((f) => f.file.endsWith('.ts') && !f.file.startsWith(`test${path.sep}`) && !f.file.startsWith(`bench${path.sep}`));
const ENTRIES = Object.entries(ERRORS) as Array<[ErrorCode, ErrorDef]>;

/** Every `class X extends Y` of the sources, with its file. */
function classes(): Map<string, { base: string; file: string }> {
  const out = new Map<string, { base: string; file: string }>();
  for (const { file, text } of SOURCES) {
    for (const m of text.matchAll(/\bclass (\w+) extends (\w+)/g)) out.set(m[1], { base: m[2], file });
  }
  return out;
}

/** The text of a class declaration, from `class X` to the next top-level declaration. */
function classBody(name: string, file: string): string {
  const text = SOURCES.find((s) => s.file === file)!.text;
  const from = text.search(new RegExp(`\\bclass ${name} extends`));
  const next = text.slice(from + 1).search(/\n(export |function |class |const |\/\*\*)/);
  return next < 0 ? text.slice(from) : text.slice(from, from + 1 + next);
}

function isCbpErrorClass(name: string, all: Map<string, { base: string }>): boolean {
  for (let cur: string | undefined = name, depth = 0; cur && depth < 10; depth++) {
    if (cur === 'CbpError') return true;
    cur = all.get(cur)?.base;
  }
  return false;
}

describe('the error catalog', () => {
  it('holds every CBP_ERR_ code written anywhere in the tree (sources, tests, SQL, docs)', () => {
    const unknown: string[] = [];
    for (const { file, text } of FILES) {
      for (const m of text.matchAll(/CBP_ERR_[A-Z0-9_]*[A-Z0-9]/g)) if (!(m[0] in ERRORS)) unknown.push(`${file}: ${m[0]}`);
    }
    expect(unknown).toEqual([]);
  });

  it('has every entry raised by the class it names, in the file that declares that class', () => {
    const all = classes();
    const problems: string[] = [];
    for (const [code, def] of ENTRIES) {
      const decl = all.get(def.class);
      if (!decl) problems.push(`${code}: no class ${def.class} in the sources`);
      else if (!SOURCES.find((s) => s.file === decl.file)!.text.includes(`'${code}'`)) problems.push(`${code}: not raised in ${decl.file}`);
      else if (!isCbpErrorClass(def.class, all)) problems.push(`${code}: ${def.class} is not a CbpError`);
    }
    expect(problems).toEqual([]);
  });

  it('names every error class of the sources that raises a code of its own', () => {
    const all = classes();
    const named = new Set(ENTRIES.map(([, d]) => d.class));
    // ServiceError, the service errors' base, is handed its code; a subclass with no code of its own (store's
    // RecordTooBigError) raises its parent's.
    const own = (c: string) => /'CBP_ERR_/.test(classBody(c, all.get(c)!.file));
    const missing = [...all.keys()].filter((c) => c !== 'CbpError' && c !== 'ServiceError' && isCbpErrorClass(c, all) && !named.has(c) && own(c));
    expect(missing).toEqual([]);
  });

  it('gives an error its status and retryable flag from its entry', () => {
    const e = new ConfigError(['CBP_X is not set']);
    expect(e).toMatchObject({ code: 'CBP_ERR_CONFIG', status: 400, retryable: false, name: 'ConfigError' });
    expect(new CbpError('CBP_ERR_STORE_UNAVAILABLE', 'held')).toMatchObject({ status: 503, retryable: true });
    // Only a code whose status is the service's takes one from the caller.
    expect(new CbpError('CBP_ERR_SERVICE_UNAVAILABLE', 'x', { status: 502 }).status).toBe(502);
    expect(new CbpError('CBP_ERR_CONFIG', 'x', { status: 500 }).status).toBe(400);
  });

  it('keeps each service status retryable exactly when the client retries it, under a code of that kind', () => {
    const wrong: string[] = [];
    for (let s = 300; s < 600; s++) {
      const e = new ServiceHttpError({ iface: 'events' satisfies ServiceInterface, operation: 'GET /x', httpStatus: s });
      const def: ErrorDef = ERRORS[e.code];
      if (e.retryable !== RETRYABLE_STATUSES.has(s) || def.retryable !== e.retryable || def.class !== 'ServiceHttpError' || e.status !== s) {
        wrong.push(`${s}: ${e.code} retryable=${e.retryable} status=${e.status}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('gives the activities\' retry policies its non-retryable codes and classes, no list of their own', () => {
    const codes = ENTRIES.filter(([, d]) => !d.retryable).map(([c]) => c);
    expect(NON_RETRYABLE_ERROR_TYPES).toEqual(nonRetryableTypes());
    expect(new Set(NON_RETRYABLE_ERROR_TYPES.filter((t) => t.startsWith('CBP_ERR_')))).toEqual(new Set(codes));
    // Class names only where every code of the class is non-retryable: never a retried one by its class.
    expect(NON_RETRYABLE_ERROR_TYPES).toEqual(expect.arrayContaining(['ConfigError', 'ValidationError', 'UsageError', 'DataKeyError']));
    for (const c of ['ServiceHttpError', 'NotifyError', 'StoreUnavailableError', 'ServiceNetworkError']) expect(NON_RETRYABLE_ERROR_TYPES).not.toContain(c);
    for (const [code, d] of ENTRIES) if (d.retryable) expect(NON_RETRYABLE_ERROR_TYPES).not.toContain(code);
    for (const o of [REPORT_ACTIVITY_OPTIONS, SERVICE_ACTIVITY_OPTIONS, ORDER_ACTIVITY_OPTIONS, STORE_ACTIVITY_OPTIONS]) {
      expect(o.retry?.nonRetryableErrorTypes).toEqual([...NON_RETRYABLE_ERROR_TYPES]);
    }
  });

  it('is shown as it is in docs/errors.md, one row per code', () => {
    const doc = fs.readFileSync(path.join(ROOT, 'docs/errors.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| `(CBP_ERR_\w+)` \| (\d+)( \(the service's\))? \| (yes|no) \| `(\w+)` \| (.+) \|$/gm)].map((m) => ({
      code: m[1],
      status: Number(m[2]),
      serviceStatus: m[3] !== undefined,
      retryable: m[4] === 'yes',
      class: m[5],
      hint: m[6],
    }));
    expect(rows).toEqual(ENTRIES.map(([code, d]) => ({ code, status: d.status, serviceStatus: d.serviceStatus === true, retryable: d.retryable, class: d.class, hint: d.hint })));
  });
});

describe('describeError', () => {
  it("says which setting to raise when DuckDB runs out of memory, in place of DuckDB's SET advice", () => {
    const duck = new Error('Out of Memory Error: could not allocate block of size 256.0 KiB (183.0 MiB/183.1 MiB used)\n\nPossible solutions:\n* Reducing the number of threads (SET threads=X)');
    expect(describeError(duck)).toBe('Out of Memory Error: could not allocate block of size 256.0 KiB (183.0 MiB/183.1 MiB used): the store needs more '
      + 'memory than its limit (CBP_STORE_MEMORY_LIMIT) allows: raise it (to twice its value, say) and run the command again');
    // A message only quoting the words (a query's text) is left as it is.
    expect(describeError(new Error('Parser Error near "Out of Memory Error:"'))).toBe('Parser Error near "Out of Memory Error:"');
  });
});
