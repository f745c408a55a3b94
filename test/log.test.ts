// lib/log.ts: a logger never prints a registered secret, nor a field named like a credential.
import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { createLogger, registerSecrets, scrub } from '../lib/log.ts';

const SECRET = 'supersecretvalue';
registerSecrets([SECRET, 'pw-hunter2-long', undefined, 'abc']);

/** A logger writing to a captured stream, and the lines it wrote (pino writes synchronously to it). */
function captured(level = 'trace') {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      cb();
    },
  });
  const logger = createLogger({ destination, level, name: 'test' });
  return { logger, lines, all: () => lines.join('\n') };
}

describe('logger', () => {
  it('writes JSON lines with an ISO time', () => {
    const { logger, lines } = captured();
    logger.info({ n: 1 }, 'hello');
    const rec = JSON.parse(lines[0]);
    expect(rec).toMatchObject({ msg: 'hello', n: 1, name: 'test', level: 30 });
    expect(rec.time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('never prints a registered secret in a message', () => {
    const { logger, all } = captured();
    logger.info(`calling with ${SECRET}`);
    logger.warn('formatted %s and %o', SECRET, { s: SECRET });
    expect(all()).not.toContain(SECRET);
    expect(all()).toContain('[REDACTED]');
  });

  it('never prints a registered secret inside a logged object, at any depth or in an array', () => {
    const { logger, all } = captured();
    logger.info({ url: `https://x.example/?k=${SECRET}`, deep: { a: { b: { c: [SECRET] } } } }, 'obj');
    expect(all()).not.toContain(SECRET);
  });

  it('never prints a field named password, authorization or token', () => {
    const { logger, lines } = captured();
    logger.info({ password: 'pw-1', authorization: 'Bearer abc-1', token: 'jwt-1' }, 'creds');
    const rec = JSON.parse(lines[0]);
    expect(rec).toMatchObject({ password: '[REDACTED]', authorization: '[REDACTED]', token: '[REDACTED]' });
    expect(lines[0]).not.toMatch(/pw-1|abc-1|jwt-1/);
  });

  it('never prints such fields nested deeply or spelled in another case', () => {
    const { logger, all } = captured();
    logger.info({ req: { headers: { Authorization: 'Bearer nested-1' } }, a: { b: { c: { d: { Password: 'nested-2', TOKEN: 'nested-3' } } } } });
    expect(all()).not.toMatch(/nested-1|nested-2|nested-3/);
  });

  it('never prints a secret carried by a logged error, and keeps its message and stack', () => {
    const { logger, lines } = captured();
    logger.error(new Error(`login failed for ${SECRET}`));
    logger.error({ err: new Error(`again ${SECRET}`) }, 'wrapped');
    expect(lines.join('\n')).not.toContain(SECRET);
    const first = JSON.parse(lines[0]);
    expect(first.msg).toBe('login failed for [REDACTED]');
    expect(first.err).toMatchObject({ type: 'Error', message: 'login failed for [REDACTED]' });
    expect(first.err.stack).toContain('Error: login failed for [REDACTED]');
  });

  it("never prints a secret or a credential field in a child logger's bindings", () => {
    const { logger, all, lines } = captured();
    const child = logger.child({ target: SECRET, token: 'child-token-1' });
    child.child({ step: 'two' }).info('from grandchild');
    expect(all()).not.toMatch(new RegExp(`${SECRET}|child-token-1`));
    expect(JSON.parse(lines[0])).toMatchObject({ target: '[REDACTED]', token: '[REDACTED]', step: 'two' });
  });

  it('does not choke on a circular object', () => {
    const { logger, lines } = captured();
    const o: Record<string, unknown> = { name: 'loop' };
    o.self = o;
    logger.info(o, 'circular');
    expect(JSON.parse(lines[0])).toMatchObject({ name: 'loop', self: '[Circular]' });
  });

  it('prints an object referenced twice (not a cycle) both times', () => {
    const { logger, lines } = captured();
    const shared = { id: 7 };
    logger.info({ a: shared, b: shared }, 'shared');
    expect(JSON.parse(lines[0])).toMatchObject({ a: { id: 7 }, b: { id: 7 } });
  });

  it('scrub() redacts a secret that is a word where it stands as a value, never the same word in a sentence', () => {
    registerSecrets(['short']);
    expect(scrub('CBP_WEBHOOK_PASSWORD is too short (5 characters, at least 16)')).toBe('CBP_WEBHOOK_PASSWORD is too short (5 characters, at least 16)');
    expect(scrub('a short one, too short.')).toBe('a short one, too short.');
    expect(scrub('http://cbp:short@127.0.0.1/x?token=short&a=b')).toBe('http://cbp:[REDACTED]@127.0.0.1/x?token=[REDACTED]&a=b');
    expect(scrub('password "short" refused; got: short')).toBe('password "[REDACTED]" refused; got: [REDACTED]');
    expect(scrub('short is the password')).toBe('[REDACTED] is the password');
    expect(scrub('shortly, shorts')).toBe('shortly, shorts');
  });

  it('scrub() replaces every registered secret and ignores values too short to be secrets', () => {
    expect(scrub(`a ${SECRET} b pw-hunter2-long c`)).toBe('a [REDACTED] b [REDACTED] c');
    expect(scrub('abc')).toBe('abc');
  });
});
