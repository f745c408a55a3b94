// The .env file as cbp reads it (lib/config.ts loads it below the environment): a strict reader that names a line it
// cannot read, never its text, and refuses what other tools would expand.
import { readFileSync } from 'node:fs';
import { ConfigError } from './errors.ts';

const DOTENV_LINE = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=[ \t]*(.*)$/;
const DQ_ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\' };
/** `${…}` or `$NAME`: what a shell, docker compose or dotenv-expand would replace, and cbp does not. */
const EXPANSION = /\$(\{|[A-Za-z_])/;
const NO_EXPANSION = 'cbp does not expand variables in .env: write the path or value out in full';

/**
 * Parses .env text: `KEY=value` lines (an optional `export `), # comments, blank lines; values bare (trimmed,
 * ` #` starts a comment), 'single-quoted' or `backquoted` (literal), or "double-quoted" (\n \r \t \" \\
 * escapes); quoted values may span lines. Node's util.parseEnv skips a line it cannot read without a word,
 * so a typo would silently drop a setting: this names the line (never its text: it may hold a secret).
 * For the same reason a CBP_ value that would read otherwise than meant is refused, naming the line: an
 * unquoted one starting with # (a comment: the value would be empty), an unquoted or double-quoted one
 * holding `${…}` or `$NAME`, an unquoted one starting with ~ (other tools expand those; cbp does not).
 */
export function parseDotenv(text: string, file: string): Record<string, string> {
  const out: Record<string, string> = {};
  const problems: string[] = [];
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (/^\s*(#.*)?$/.test(line)) continue;
    const m = DOTENV_LINE.exec(line);
    if (!m) {
      problems.push(`${file} line ${i + 1} is not KEY=value (a # starts a comment line)`);
      continue;
    }
    const [, key, rest] = m;
    const q = rest[0];
    if (q !== '"' && q !== "'" && q !== '`') {
      const value = rest.replace(/(^|\s+)#.*$/, '').trim();
      // A value read otherwise than written must not go unnoticed (a password emptied, a folder named
      // "${HOME}"); only for cbp's names: another tool's lines in a shared .env are its business.
      const problem = key.startsWith('CBP_') ? bareValueProblem(key, rest, value) : null;
      if (problem) problems.push(`${file} line ${i + 1}: ${problem}`);
      else out[key] = value;
      continue;
    }
    // A quoted value: read to its closing quote, across lines if need be.
    const start = i;
    let body = rest.slice(1);
    let value = '';
    let closed = false;
    let after = '';
    for (;;) {
      let j = 0;
      for (; j < body.length; j++) {
        const c = body[j];
        if (q === '"' && c === '\\' && j + 1 < body.length) {
          const e = body[j + 1];
          value += DQ_ESCAPES[e] ?? `\\${e}`;
          j++;
        } else if (c === q) {
          closed = true;
          after = body.slice(j + 1);
          break;
        } else value += c;
      }
      if (closed || i + 1 >= lines.length) break;
      value += '\n';
      body = lines[++i];
    }
    if (!closed) {
      problems.push(`${file} line ${start + 1}: the ${q} quote that opens ${key}'s value is never closed`);
      break;
    }
    if (!/^\s*(#.*)?$/.test(after)) {
      problems.push(`${file} line ${i + 1}: ${key}'s quoted value is followed by more text (write a # before a comment)`);
      continue;
    }
    if (q === '"' && key.startsWith('CBP_') && EXPANSION.test(value)) {
      // Docker compose and dotenv-expand replace variables inside double quotes too.
      problems.push(`${file} line ${start + 1}: ${key}'s value holds a $ variable, and ${NO_EXPANSION} (a $ meant literally: single quotes, ${key}='…')`);
      continue;
    }
    out[key] = value;
  }
  if (problems.length) throw new ConfigError(problems);
  return out;
}

/**
 * Why an unquoted .env value would be read otherwise than its writer meant, or null. Names the key, never
 * the value (it may be a secret). `rest`: the text after `=`; `value`: what it reads as.
 */
function bareValueProblem(key: string, rest: string, value: string): string | null {
  if (rest.startsWith('#')) {
    return `${key}'s value starts with #, which starts a comment and would leave ${key} empty: quote it: ${key}="#…" (to leave it empty, write ${key}= alone)`;
  }
  if (EXPANSION.test(value)) return `${key}'s value holds a $ variable, and ${NO_EXPANSION} (a $ meant literally: quote the value, ${key}='…')`;
  if (value.startsWith('~')) return `${key}'s value starts with ~, and ${NO_EXPANSION} (${key}=/home/you/…; a ~ meant literally: quote the value, ${key}='~…')`;
  return null;
}

/** The .env file's settings, or undefined when there is none (it is optional). */
export function readDotenv(file: string, shown: string): Record<string, string> | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw new ConfigError([`${shown} cannot be read (${code ?? (e as Error).message}): fix its permissions, or remove it`]);
  }
  return parseDotenv(text, shown);
}
