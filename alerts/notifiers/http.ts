// One JSON POST with in-call retries (network error, 429, 5xx), as undici's own tests script faults:
// a 500 then a 200 is one delivery. What is still failing after the last try goes back to the outbox.
import { request } from 'undici';
import { NotifyError } from '../errors.ts';
import { createRedactor } from '../redact.ts';

export interface PostOptions {
  notifier: string;
  url: string;
  body: string;
  headers?: Record<string, string>;
  /** further attempts inside one delivery (default 2) */
  retries?: number;
  /** first backoff in ms, doubled per attempt (default 200) */
  backoffMs?: number;
  /** per attempt (default 10 000 ms) */
  timeoutMs?: number;
  /** values redacted from error messages (an endpoint may echo the URL, a Slack hook's token, back) */
  secrets?: readonly string[];
}

/** Characters of an error answer's body kept in the message (after redaction, so no secret is cut in half). */
const BODY_CHARS = 300;

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(invalid url)';
  }
}

export async function postJson(o: PostOptions): Promise<void> {
  const retries = Math.max(0, o.retries ?? 2);
  const redact = createRedactor(o.secrets ?? []);
  let last: NotifyError | undefined;
  for (let attempt = 0; attempt <= retries; attempt++) {
    if (attempt > 0) await new Promise((r) => setTimeout(r, (o.backoffMs ?? 200) * 2 ** (attempt - 1)));
    try {
      const res = await request(o.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...o.headers },
        body: o.body,
        headersTimeout: o.timeoutMs ?? 10_000,
        bodyTimeout: o.timeoutMs ?? 10_000,
      });
      const body = await res.body.text();
      if (res.statusCode >= 200 && res.statusCode < 300) return;
      const retryable = res.statusCode === 429 || res.statusCode >= 500;
      // The URL (a Slack hook is a secret) is never in the message, only its host; the body may echo it.
      const text = redact(body.trim()).slice(0, BODY_CHARS);
      last = new NotifyError(o.notifier, `${hostOf(o.url)} answered ${res.statusCode}${text ? `: ${text}` : ''}`, retryable, { status: res.statusCode });
      if (!retryable) throw last;
    } catch (e) {
      if (e instanceof NotifyError && !e.retryable) throw e;
      if (!(e instanceof NotifyError)) {
        // No cause attached: its message and fields are not redacted, and errors end up logged.
        last = new NotifyError(o.notifier, `${hostOf(o.url)} unreachable: ${redact((e as Error).message ?? String(e))}`, true);
      }
    }
  }
  throw last ?? new NotifyError(o.notifier, 'delivery failed', true);
}
