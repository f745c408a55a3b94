// lib/config.ts: sources and their order, file formats, and messages that name settings but never secrets.
import { afterAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SETTINGS, envExample, loadConfig, requireSettings, secretValues } from '../lib/config.ts';
import { ConfigError } from '../lib/errors.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
}

/** The ConfigError a call throws (fails the test if it throws nothing or something else). */
function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the defaults written beside each setting when nothing is set', () => {
    const cfg = loadConfig({ env: {} });
    expect(cfg.httpTimeoutMs).toBe(30000);
    expect(cfg.dbPath).toBe('data/cbp.duckdb');
    expect(cfg.webhookPort).toBe(8787);
    expect(cfg.apiSecret).toBeUndefined();
  });

  it('reads a JSON config file (camelCase keys)', () => {
    const f = file('a.json', JSON.stringify({ httpTimeoutMs: 1234, dbPath: '/tmp/x.duckdb', reportingBaseUrl: 'https://rep.example' }));
    expect(loadConfig({ env: {}, file: f })).toMatchObject({ httpTimeoutMs: 1234, dbPath: '/tmp/x.duckdb', reportingBaseUrl: 'https://rep.example' });
  });

  it('reads a YAML config file (.yaml and .yml, env-variable keys too)', () => {
    const f1 = file('a.yaml', 'httpRetries: 2\nCBP_WEBHOOK_PATH: /hooks\n');
    expect(loadConfig({ env: {}, file: f1 })).toMatchObject({ httpRetries: 2, webhookPath: '/hooks' });
    const f2 = file('b.yml', 'logLevel: debug\n');
    expect(loadConfig({ env: {}, file: f2 }).logLevel).toBe('debug');
  });

  it('lets an environment variable override the config file', () => {
    const f = file('override.yaml', 'httpTimeoutMs: 1000\ndbPath: from-file.duckdb\n');
    const cfg = loadConfig({ env: { CBP_HTTP_TIMEOUT_MS: '2000' }, file: f });
    expect(cfg.httpTimeoutMs).toBe(2000);
    expect(cfg.dbPath).toBe('from-file.duckdb');
  });

  it('finds the config file through CBP_CONFIG', () => {
    const f = file('via-env.json', JSON.stringify({ dataDir: 'elsewhere' }));
    expect(loadConfig({ env: { CBP_CONFIG: f } }).dataDir).toBe('elsewhere');
  });

  it('ignores an empty environment variable', () => {
    expect(loadConfig({ env: { CBP_DB_PATH: '' } }).dbPath).toBe('data/cbp.duckdb');
  });

  it('reports an unknown key in the config file', () => {
    const f = file('unknown.json', JSON.stringify({ httpTimeoutMs: 5, dbPaht: 'typo.duckdb' }));
    const e = configError(() => loadConfig({ env: {}, file: f }));
    expect(e.code).toBe('CBP_ERR_CONFIG');
    expect(e.message).toContain('unknown setting "dbPaht"');
  });

  it('takes the store memory limit as a DuckDB size, and refuses anything else', () => {
    expect(loadConfig({ env: {} }).storeMemoryLimit).toBe('256MB');
    expect(loadConfig({ env: { CBP_STORE_MEMORY_LIMIT: '2GB' } }).storeMemoryLimit).toBe('2GB');
    const e = configError(() => loadConfig({ env: { CBP_STORE_MEMORY_LIMIT: 'lots' } }));
    expect(e.message).toContain('CBP_STORE_MEMORY_LIMIT');
    expect(e.message).toContain('must be a size such as 256MB or 2GB');
  });

  it('names an invalid value by its environment variable, with the value and what is expected', () => {
    const e = configError(() => loadConfig({ env: { CBP_WEBHOOK_PORT: '70000', CBP_HTTP_TIMEOUT_MS: 'soon' } }));
    expect(e.problems).toHaveLength(2);
    expect(e.message).toContain('CBP_WEBHOOK_PORT');
    expect(e.message).toContain('"70000"');
    expect(e.message).toContain('must be a port number 0-65535');
    expect(e.message).toContain('CBP_HTTP_TIMEOUT_MS');
    expect(e.message).toContain('"soon"');
  });

  it('names an invalid value from the file by its environment variable and the file', () => {
    const f = file('bad.yaml', 'webhookPublicUrl: not-a-url\n');
    const e = configError(() => loadConfig({ env: {}, file: f }));
    expect(e.message).toContain('CBP_WEBHOOK_PUBLIC_URL');
    expect(e.message).toContain(f);
  });

  it('reports a config file that does not exist', () => {
    const e = configError(() => loadConfig({ env: {}, file: path.join(dir, 'missing.yaml') }));
    expect(e.message).toContain('missing.yaml does not exist');
  });

  it('reports a config file that is not an object', () => {
    const e = configError(() => loadConfig({ env: {}, file: file('list.json', '[1,2]') }));
    expect(e.message).toContain('must hold an object of settings');
  });
});

describe('secrets in configuration messages', () => {
  it('never shows an invalid secret value', () => {
    const e = configError(() => loadConfig({ env: { CBP_SLACK_WEBHOOK_URL: 'hooks-slack-supersecretvalue' } }));
    expect(e.message).toContain('CBP_SLACK_WEBHOOK_URL');
    expect(e.message).toContain('(hidden)');
    expect(e.message).not.toContain('supersecretvalue');
  });

  it('never shows a secret from a YAML file that fails to parse', () => {
    const f = file('broken.yaml', 'apiSecret: "supersecretvalue\nother: [1\n');
    const e = configError(() => loadConfig({ env: {}, file: f }));
    expect(e.message).toContain('is not valid YAML');
    expect(e.message).not.toContain('supersecretvalue');
  });

  it('never shows a secret from a JSON file that fails to parse', () => {
    const f = file('broken.json', '{"apiSecret": supersecretvalue}');
    const e = configError(() => loadConfig({ env: {}, file: f }));
    expect(e.message).toContain('is not valid JSON');
    expect(e.message).not.toContain('supersecretvalue');
  });

  it('lists the values of secret settings so they can be scrubbed from output', () => {
    const cfg = loadConfig({ env: { CBP_API_SECRET: 'supersecretvalue', CBP_DATA_USERNAME: 'merchant' } });
    expect(secretValues(cfg)).toEqual(['supersecretvalue']);
  });
});

describe('requireSettings', () => {
  it('passes when every needed setting is set', () => {
    const cfg = loadConfig({ env: { CBP_API_SECRET: 'x'.repeat(8), CBP_AUTH_BASE_URL: 'https://auth.example/v1' } });
    expect(() => requireSettings(cfg, ['apiSecret', 'authBaseUrl'], 'the token client')).not.toThrow();
  });

  it('names every missing setting at once, each with what it is for', () => {
    const cfg = loadConfig({ env: { CBP_REPORTING_BASE_URL: 'https://rep.example' } });
    const e = configError(() => requireSettings(cfg, ['reportingBaseUrl', 'reportingKey', 'companyToken'], 'cbp fetch'));
    expect(e.problems).toHaveLength(2);
    expect(e.problems[0]).toBe('CBP_REPORTING_KEY is not set; cbp fetch needs it: Reporting interface bearer key');
    expect(e.problems[1]).toBe('CBP_COMPANY_TOKEN is not set; cbp fetch needs it: Company token sent in every reporting request body');
  });

  it('never shows the secrets that are set when others are missing', () => {
    const cfg = loadConfig({ env: { CBP_API_SECRET: 'supersecretvalue' } });
    const e = configError(() => requireSettings(cfg, ['apiSecret', 'authBaseUrl'], 'the token client'));
    expect(e.message).toContain('CBP_AUTH_BASE_URL');
    expect(e.message).not.toContain('supersecretvalue');
  });
});

describe('.env.example', () => {
  it('equals envExample() output', () => {
    const text = fs.readFileSync(new URL('../.env.example', import.meta.url), 'utf8');
    expect(text).toBe(envExample());
  });

  it('lists every setting', () => {
    const text = envExample();
    for (const d of SETTINGS) expect(text, d.env).toMatch(new RegExp(`^(# )?${d.env}=`, 'm'));
  });

  it('has a unique environment variable and key per setting', () => {
    expect(new Set(SETTINGS.map((d) => d.env)).size).toBe(SETTINGS.length);
    expect(new Set(SETTINGS.map((d) => d.key)).size).toBe(SETTINGS.length);
  });

  it('writes a default that is itself valid for every setting that has one', () => {
    for (const d of SETTINGS) if (d.default !== undefined) expect(d.schema.safeParse(d.default).success, d.env).toBe(true);
  });
});
