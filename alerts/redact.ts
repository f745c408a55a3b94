// Keeping secrets out of what delivery stores and logs. A notifier's endpoint may echo what it was sent: a
// Slack-style hook answers 500 with the request path (its token), an SMTP server rejects AUTH quoting the
// password, a proxy repeats the URL percent-encoded. Every error text goes through a redactor built from the
// configured secrets (and the notifiers' own) before it reaches alert_outbox.last_error or a log line.

/** Shorter values are not redacted: "smtp" or "cbp" would blank out half of every message (as lib/log.ts). */
export const MIN_SECRET_LENGTH = 4;

const REDACTED = '[REDACTED]';

function tryDecode(s: string): string | undefined {
  try {
    const d = decodeURIComponent(s);
    return d === s ? undefined : d;
  } catch {
    return undefined;
  }
}

/**
 * The spellings a secret may be echoed in: as is, percent-encoded (component and whole-URI), percent-decoded,
 * JSON-escaped (quotes, backslashes, `\/`), and base64 (SMTP AUTH LOGIN sends each credential so).
 */
export function secretForms(values: Iterable<string | undefined | null>): string[] {
  const out = new Set<string>();
  const add = (s: string | undefined) => {
    if (s && s.length >= MIN_SECRET_LENGTH) out.add(s);
  };
  for (const v of values) {
    if (typeof v !== 'string' || v.length < MIN_SECRET_LENGTH) continue;
    const decoded = tryDecode(v);
    for (const s of decoded === undefined ? [v] : [v, decoded]) {
      add(s);
      try {
        add(encodeURIComponent(s));
        add(encodeURI(s));
      } catch {
        // A lone surrogate cannot be percent-encoded, so it cannot be echoed that way either.
      }
      const json = JSON.stringify(s).slice(1, -1);
      add(json);
      add(json.replace(/\//g, '\\/'));
      add(Buffer.from(s, 'utf8').toString('base64'));
      add(Buffer.from(s, 'utf8').toString('base64').replace(/=+$/, ''));
    }
  }
  return [...out];
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A function that replaces every form of every given secret by [REDACTED], case-insensitively (percent-encoding
 * may use %2f or %2F), longest first so a secret inside a longer one is not left half-visible.
 */
export function createRedactor(values: Iterable<string | undefined | null>): (text: string) => string {
  const forms = secretForms(values).sort((a, b) => b.length - a.length);
  if (forms.length === 0) return (text) => text;
  const re = new RegExp(forms.map(escapeRegExp).join('|'), 'gi');
  return (text) => text.replace(re, REDACTED);
}
