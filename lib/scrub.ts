// Values, not words: a secret that is a short lower-case word (under 12 letters, e.g. a too-short password "short") is
// kept where it stands as a word of a sentence, and redacted anywhere else. Shared by the logs and the notices.

/** Whether a secret is redacted by position (a short lower-case word) rather than everywhere. */
export function isWordSecret(s: string): boolean {
  return /^[a-z]{4,11}$/.test(s);
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Redacts a word-like secret except as a word of a sentence (after a word and a space, before a space, punctuation or
 * the end: "is too short ("), and never inside a longer word; elsewhere (in a URL, quoted, after `=` or `:`, first) it
 * is replaced by `mark`.
 */
export function redactWordSecret(text: string, s: string, mark = '[REDACTED]'): string {
  if (!text.includes(s)) return text;
  const re = new RegExp(`(?<![A-Za-z0-9_])${escape(s)}(?![A-Za-z0-9_])`, 'g');
  return text.replace(re, (m, at: number, all: string) =>
    /[A-Za-z] $/.test(all.slice(0, at)) && /^(?:$|[ .,;!?)])/.test(all.slice(at + m.length)) ? m : mark);
}
