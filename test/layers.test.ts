// The layers of DESIGN.md ("Parts and where they live"), kept by reading the sources: the store owns every
// table (no SQL statement on a store table outside store/, nothing else opens a transaction or holds the
// DuckDB client), and no import runs back up the table of layers. Both lists of findings name file, line
// and what to do; the allow-lists below are the only exceptions, each with its reason.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** Folders that are not parts: tests, benchmarks and build tooling may import everything and run any SQL. */
const NOT_SCANNED = new Set(['node_modules', 'dist', 'data', 'test', 'bench', 'scripts', 'coverage', 'test-artifacts']);

// --- the table of layers, as data -------------------------------------------------------------------------

interface Layer {
  /** Parts whose modules it may import (values and types). */
  may: readonly string[];
  /** Parts it may import types from, and nothing that runs. */
  types?: readonly string[];
  /**
   * Parts whose pure modules it may import values from: a module that, with everything it imports, uses no
   * node: built-in and no package but zod (DESIGN: "nothing in workflows/ knows about I/O").
   */
  pure?: readonly string[];
  /** Single files it may import types from (beyond `types`), with why in the table's comment. */
  typeFiles?: readonly string[];
  /** The only packages it may import (default: any). */
  packages?: readonly string[];
}

const EVERYTHING = ['contract', 'lib', 'client', 'sandbox', 'webhook', 'store', 'rules', 'report', 'alerts', 'activities', 'workflows', 'worker'];

/**
 * DESIGN.md's table, plus lib/ (the shared bottom layer: every part may import it, and it imports only lib/
 * and contract/) and the two parts the table does not name, placed where their imports put them
 * (docs/spec-decisions.md, "Layers"): rules/ (pure rule evaluation over contract types) sits beside store/,
 * alerts/ (evaluation and delivery through store/alerts.ts) between store/ and activities/.
 */
const LAYERS: Record<string, Layer> = {
  contract: { may: [], packages: ['zod'] }, // zod only
  lib: { may: ['contract'] },
  client: { may: ['contract', 'lib'] },
  sandbox: { may: ['contract', 'lib'] },
  webhook: { may: ['lib'], types: ['contract'] }, // contract for types only
  store: { may: ['contract', 'lib'] }, // and sql/, which it reads as files
  rules: { may: ['contract', 'lib'] },
  // Pure rendering of the analyst's report and its charts: data in, SVG/HTML out. The data's shapes are the
  // store's query results (types only); it runs no query and writes no file.
  report: { may: ['contract', 'lib', 'rules'], types: ['store'] },
  alerts: { may: ['contract', 'lib', 'store', 'rules', 'report'] },
  activities: { may: ['contract', 'lib', 'client', 'sandbox', 'webhook', 'store', 'rules', 'report', 'alerts'] }, // everything above
  // Contract types and pure helpers. The bodies are written against the activities' interface
  // (activities/types.ts, types only: a workflow never runs an activity's code, the driver passes them in).
  workflows: { may: [], types: ['contract'], pure: ['contract', 'lib'], typeFiles: ['activities/types.ts'] },
  worker: { may: ['lib', 'workflows', 'activities'] },
  cli: { may: EVERYTHING },
};

// --- reading the sources ----------------------------------------------------------------------------------

interface Source {
  /** path from the root, with / */
  rel: string;
  part: string;
  sf: ts.SourceFile;
}

function sources(): Source[] {
  const out: Source[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (e.name.startsWith('.') || (dir === ROOT && NOT_SCANNED.has(e.name)) || e.name === 'node_modules') continue;
      const abs = path.join(dir, e.name);
      if (e.isDirectory()) walk(abs);
      // Files at the root are tooling configuration (vitest.config.ts), not a part.
      else if (/\.(ts|mts|cts)$/.test(e.name) && !e.name.endsWith('.d.ts') && dir !== ROOT) {
        const rel = path.relative(ROOT, abs).split(path.sep).join('/');
        out.push({ rel, part: rel.split('/')[0], sf: ts.createSourceFile(rel, fs.readFileSync(abs, 'utf8'), ts.ScriptTarget.Latest, true) });
      }
    }
  };
  walk(ROOT);
  return out;
}

const SOURCES = sources();
const lineOf = (s: Source, node: ts.Node) => s.sf.getLineAndCharacterOfPosition(node.getStart(s.sf)).line + 1;

function visit(node: ts.Node, fn: (n: ts.Node) => void): void {
  fn(node);
  node.forEachChild((c) => visit(c, fn));
}

interface Import {
  spec: string;
  typeOnly: boolean;
  line: number;
}

/** Every import of a file: static (type-only when nothing of it runs), re-exports, dynamic import(). */
function importsOf(s: Source): Import[] {
  const out: Import[] = [];
  visit(s.sf, (n) => {
    if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
      const c = n.importClause;
      const named = c?.namedBindings;
      const typeOnly = !!c && (c.isTypeOnly || (!c.name && !!named && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly)));
      out.push({ spec: n.moduleSpecifier.text, typeOnly, line: lineOf(s, n) });
    } else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
      const c = n.exportClause;
      const typeOnly = n.isTypeOnly || (!!c && ts.isNamedExports(c) && c.elements.length > 0 && c.elements.every((e) => e.isTypeOnly));
      out.push({ spec: n.moduleSpecifier.text, typeOnly, line: lineOf(s, n) });
    } else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const arg = n.arguments[0];
      if (arg && ts.isStringLiteralLike(arg)) out.push({ spec: arg.text, typeOnly: false, line: lineOf(s, n) });
    } else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument) && ts.isStringLiteral(n.argument.literal)) {
      out.push({ spec: n.argument.literal.text, typeOnly: true, line: lineOf(s, n) });
    }
  });
  return out;
}

/** The path from the root a relative import names, or null for a package or built-in. */
function target(from: Source, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  return path.relative(ROOT, path.resolve(ROOT, path.dirname(from.rel), spec)).split(path.sep).join('/');
}

const byRel = new Map(SOURCES.map((s) => [s.rel, s]));
const pureCache = new Map<string, boolean>();

/** A module that, with everything it runs, uses no node: built-in and no package but zod. */
function isPure(rel: string): boolean {
  if (/\.json$/.test(rel)) return true; // data
  const cached = pureCache.get(rel);
  if (cached !== undefined) return cached;
  const s = byRel.get(rel);
  if (!s) return false;
  pureCache.set(rel, true); // an import cycle does not make a module impure
  const pure = importsOf(s)
    .filter((i) => !i.typeOnly)
    .every((i) => {
      const t = target(s, i.spec);
      return t === null ? i.spec === 'zod' : isPure(t);
    });
  pureCache.set(rel, pure);
  return pure;
}

function layerViolations(): string[] {
  const out: string[] = [];
  for (const s of SOURCES) {
    const layer = LAYERS[s.part];
    if (!layer) {
      out.push(`${s.rel}: the part ${s.part}/ is not in the table of layers (test/layers.test.ts, DESIGN.md): add it, with what it may import`);
      continue;
    }
    for (const i of importsOf(s)) {
      const t = target(s, i.spec);
      if (t === null) {
        if (layer.packages && !i.spec.startsWith('node:') && !layer.packages.includes(i.spec)) {
          out.push(`${s.rel}:${i.line} imports the package ${i.spec}: ${s.part}/ may import only ${layer.packages.join(', ')}`);
        } else if (layer.packages && i.spec.startsWith('node:')) {
          out.push(`${s.rel}:${i.line} imports ${i.spec}: ${s.part}/ may import only ${layer.packages.join(', ')}`);
        }
        continue;
      }
      const to = t.split('/')[0];
      if (to === s.part) continue;
      // lib/ is the shared bottom layer (pure modules only where the layer asks for purity); contract/ is zod only.
      const bottom = s.part !== 'contract' && !layer.pure?.includes('lib');
      if (bottom && to === 'lib') continue;
      if (layer.may.includes(to)) continue;
      if (i.typeOnly && (layer.types?.includes(to) || layer.typeFiles?.includes(t))) continue;
      if (layer.pure?.includes(to) && (i.typeOnly || isPure(t))) continue;
      const allowed = [
        ...new Set([...(bottom ? ['lib'] : []), ...layer.may]),
        ...(layer.types ?? []).map((p) => `${p} (types)`),
        ...(layer.pure ?? []).map((p) => `${p} (pure modules)`),
        ...(layer.typeFiles ?? []).map((f) => `${f} (types)`),
      ];
      out.push(
        `${s.rel}:${i.line} imports ${i.typeOnly ? 'types from ' : ''}${t}: ${s.part}/ may import ${allowed.length ? allowed.join(', ') : 'nothing of the other parts'}` +
          (layer.pure?.includes(to) ? ' (that module, or one it imports, does I/O)' : ''),
      );
    }
  }
  return out;
}

// --- SQL outside store/ -----------------------------------------------------------------------------------

/** The store's tables and views, as the migrations and view files create them. */
function storeTables(): string[] {
  const names = new Set<string>();
  for (const dir of ['sql/migrations', 'sql/views']) {
    for (const f of fs.readdirSync(path.join(ROOT, dir)).filter((x) => x.endsWith('.sql'))) {
      const sql = fs.readFileSync(path.join(ROOT, dir, f), 'utf8');
      for (const m of sql.matchAll(/\bCREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?(?:TABLE|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?"?([A-Za-z_][A-Za-z0-9_]*)/gi)) {
        names.add(m[1].toLowerCase());
      }
    }
  }
  return [...names].sort();
}

const TABLES = storeTables();
/**
 * A statement: a literal that starts with a statement's keyword in upper case (this codebase's SQL is written
 * so) and goes on, or is a bare BEGIN / COMMIT / ROLLBACK / CHECKPOINT. An HTTP method alone ('DELETE') is not.
 */
const STATEMENT = /^\s*(?:(?:SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|COPY|ATTACH|DETACH|WITH|PRAGMA|SET|RESET|CHECKPOINT|INSTALL|LOAD|MERGE|TRUNCATE|VACUUM|EXPORT|IMPORT|CALL|DESCRIBE|SUMMARIZE|BEGIN|COMMIT|ROLLBACK|ABORT|USE)\s+\S|(?:BEGIN|COMMIT|ROLLBACK|CHECKPOINT)\s*;?\s*$)/;
/** A statement in any case, by its shape (prose seldom starts so). */
const STATEMENT_ANY_CASE =
  /^\s*(?:select\s[\s\S]*\sfrom\s|insert\s+(?:or\s+\w+\s+)?into\s|delete\s+from\s|update\s+\S+\s+set\s|create\s+(?:or\s+replace\s+)?(?:temp(?:orary)?\s+)?(?:table|view)\s|drop\s+(?:table|view)\s|copy\s+\S+\s+(?:to|from)\s+'|attach\s+(?:database\s+)?(?:if\s+not\s+exists\s+)?'|begin\s+transaction\b|with\s+\w+(?:\s*\([^)]*\))?\s+as\s*(?:materialized\s*)?\()/i;
/** A literal that names a store table where a statement would: FROM, JOIN, INTO, UPDATE or TABLE before it. */
const ON_TABLE = new RegExp(`\\b(?:FROM|JOIN|INTO|UPDATE|TABLE|DESCRIBE)\\s+"?(?:main\\.)?(${TABLES.join('|')})\\b`);
const looksLikeSql = (text: string) => STATEMENT.test(text) || STATEMENT_ANY_CASE.test(text) || ON_TABLE.test(text);

/**
 * The literals outside store/ that look like SQL on the store and are not: each names the file and a piece of
 * the literal, and says why it is allowed. An entry that no longer matches anything fails the test, so the
 * list only ever holds what is still there.
 */
const SQL_ALLOWED: ReadonlyArray<{ file: string; contains: string; why: string }> = [
  // Hints that quote a query for the person to type into `cbp sql`, which runs it on the published snapshot
  // (store/analyst.ts): text shown to a user, never run by cbp.
  { file: 'cli/commands/sql.ts', contains: 'cbp sql "SELECT count(*) FROM chargebacks"', why: 'a usage message quoting a query for cbp sql' },
  { file: 'cli/commands/load.ts', contains: 'see them with: cbp sql "SELECT reason, raw FROM quarantine', why: 'a hint quoting a query for cbp sql' },
  { file: 'cli/commands/status.ts', contains: 'cbp sql "SELECT * FROM order_pushes WHERE status = \'rejected\'"', why: 'a hint quoting a query for cbp sql' },
  { file: 'cli/commands/status.ts', contains: 'cbp sql "SELECT * FROM order_rejects"', why: 'a hint quoting a query for cbp sql' },
  { file: 'cli/commands/demo.ts', contains: 'npx cbp sql --snapshot', why: "the demo's closing hint: a cbp sql command line for the user to run" },
];

interface Finding {
  file: string;
  line: number;
  text: string;
}

/** The text of a string or template literal (a template's substitutions as ${…}). */
function literalText(n: ts.Node, sf: ts.SourceFile): string | null {
  if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) return n.text;
  if (ts.isTemplateExpression(n)) return n.head.text + n.templateSpans.map((sp) => `\${${sp.expression.getText(sf)}}${sp.literal.text}`).join('');
  return null;
}

/** Receivers that are a Store (or the DuckDB connection) by the names this codebase gives them. */
const STORE_NAME = /^(?:store|s|db|conn|connection|session|snapshot|snap|writer|reader|tx|\w*Store)$/;

function sqlFindings(): { statements: Finding[]; calls: Finding[]; duckdb: Finding[] } {
  const statements: Finding[] = [];
  const calls: Finding[] = [];
  const duckdb: Finding[] = [];
  for (const s of SOURCES) {
    if (s.part === 'store') continue;
    visit(s.sf, (n) => {
      if (ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) {
        const spec = (n.moduleSpecifier as ts.StringLiteral | undefined)?.text;
        if (spec?.startsWith('@duckdb/')) duckdb.push({ file: s.rel, line: lineOf(s, n), text: spec });
        return;
      }
      if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword) {
        const a = n.arguments[0];
        if (a && ts.isStringLiteralLike(a) && a.text.startsWith('@duckdb/')) duckdb.push({ file: s.rel, line: lineOf(s, n), text: a.text });
      }
      const text = literalText(n, s.sf);
      if (text !== null && !ts.isTemplateExpression(n.parent) && !ts.isTemplateSpan(n.parent)) {
        if (looksLikeSql(text)) statements.push({ file: s.rel, line: lineOf(s, n), text });
      }
      if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression)) {
        const name = n.expression.name.text;
        const recv = n.expression.expression;
        const recvName = ts.isIdentifier(recv) ? recv.text : ts.isPropertyAccessExpression(recv) ? recv.name.text : '';
        const first = n.arguments[0];
        const sqlArg = !!first && literalText(first, s.sf) !== null;
        if (
          name === 'transaction' ||
          name === 'runAndReadAll' ||
          name === 'createAppender' ||
          ((name === 'all' || name === 'run') && recvName !== 'Promise' && (STORE_NAME.test(recvName) || sqlArg))
        ) {
          calls.push({ file: s.rel, line: lineOf(s, n), text: n.getText(s.sf).split('\n')[0].slice(0, 120) });
        }
      }
    });
  }
  return { statements, calls, duckdb };
}

const show = (f: Finding) => `${f.file}:${f.line}: ${f.text.replace(/\s+/g, ' ').slice(0, 140)}`;

describe('layers', () => {
  it('reads the sources of every part, and the store tables from the migrations and views', () => {
    const parts = new Set(SOURCES.map((s) => s.part));
    for (const p of ['contract', 'store', 'alerts', 'activities', 'workflows', 'cli']) expect(parts).toContain(p);
    for (const t of ['alerts', 'alert_states', 'alert_outbox', 'runs', 'loads', 'quarantine', 'mart_ratios']) expect(TABLES).toContain(t);
  });

  it('runs no SQL statement on a store table outside store/', () => {
    const { statements } = sqlFindings();
    const unexplained = statements.filter((f) => !SQL_ALLOWED.some((a) => a.file === f.file && f.text.includes(a.contains)));
    expect(
      unexplained.map((f) => `${show(f)} — move the statement behind a named function in store/ (DESIGN: the store owns its tables)`),
    ).toEqual([]);
    const stale = SQL_ALLOWED.filter((a) => !statements.some((f) => a.file === f.file && f.text.includes(a.contains)));
    expect(stale.map((a) => `${a.file}: "${a.contains}" is allowed but no longer there: remove it from SQL_ALLOWED`)).toEqual([]);
  });

  it('opens no transaction and runs nothing on a Store or its DuckDB connection outside store/, and only store/ holds the DuckDB client', () => {
    const { calls, duckdb } = sqlFindings();
    expect(calls.map((f) => `${show(f)} — call a named function of store/ instead`)).toEqual([]);
    expect(duckdb.map((f) => `${show(f)} — only store/ opens DuckDB`)).toEqual([]);
  });

  it('has no import running back up the table of layers', () => {
    expect(layerViolations()).toEqual([]);
  });
});
