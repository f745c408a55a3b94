// Comparing secrets (passwords, keys, tokens) in constant time. Both sides are hashed first so timingSafeEqual
// compares equal-length digests: the time taken says nothing about the expected value, its length included.
import { createHash, timingSafeEqual } from 'node:crypto';

/** The digest a secret is compared by; a checker may compute its expected value's once. */
export function secretDigest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/** Whether two secrets are equal, in time that does not depend on either. */
export function sameSecret(a: string, b: string | Buffer): boolean {
  return timingSafeEqual(secretDigest(a), typeof b === 'string' ? secretDigest(b) : b);
}
