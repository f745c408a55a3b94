// Reading a config file of settings (--config, CBP_CONFIG, a data folder's settings.json): its parse errors placed
// by line and column, without the parser's words (they quote the text, which may hold a secret).
import { existsSync, readFileSync } from 'node:fs';
import { parseYaml } from './yaml.ts';
import { ConfigError } from './errors.ts';

/**
 * Where a config file fails to parse, without the parser's own message: both YAML and V8's JSON.parse quote
 * the offending text, which may be a secret's value.
 */
function parseErrorPlace(e: unknown, text: string): string {
  const yamlPos = (e as { linePos?: Array<{ line: number; col: number }> }).linePos?.[0];
  if (yamlPos) return ` (line ${yamlPos.line}, column ${yamlPos.col})`;
  const m = /position (\d+)/.exec((e as Error).message ?? '');
  if (!m) return '';
  const before = text.slice(0, +m[1]).split('\n');
  return ` (line ${before.length}, column ${before[before.length - 1].length + 1})`;
}

/** A config file's settings (JSON, or YAML by its name); a ConfigError naming the file, never its text. */
export function readConfigFile(file: string, shown: string): Record<string, unknown> {
  if (!existsSync(file)) throw new ConfigError([`config file ${shown} does not exist: fix --config or CBP_CONFIG`]);
  const text = readFileSync(file, 'utf8');
  let parsed: unknown;
  try {
    parsed = /\.ya?ml$/i.test(file) ? parseYaml(text) : JSON.parse(text);
  } catch (e) {
    throw new ConfigError([`config file ${shown} is not valid ${/\.ya?ml$/i.test(file) ? 'YAML' : 'JSON'}${parseErrorPlace(e, text)}`]);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError([`config file ${shown} must hold an object of settings, e.g. {"dataDir": "/var/lib/cbp"}`]);
  }
  return parsed as Record<string, unknown>;
}
