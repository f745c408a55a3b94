// A small seeded PRNG (sfc32) for the sandbox's scenario generator. Deterministic by construction: no
// Math.random, no clock. `fork(label)` derives an independent stream from the seed and a label, so one MID's
// or one month's draws do not shift when another part of the scenario changes.

/** cyrb128: hashes a string to four 32-bit words, the seed material of sfc32. */
function cyrb128(str: string): [number, number, number, number] {
  let h1 = 1779033703;
  let h2 = 3144134277;
  let h3 = 1013904242;
  let h4 = 2773480762;
  for (let i = 0; i < str.length; i++) {
    const k = str.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  h1 ^= h2 ^ h3 ^ h4;
  h2 ^= h1;
  h3 ^= h1;
  h4 ^= h1;
  return [h1 >>> 0, h2 >>> 0, h3 >>> 0, h4 >>> 0];
}

const HEX_CODES = Array.from('0123456789abcdef', (c) => c.charCodeAt(0));

export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  /** The seed material this stream was built from; forks hash it with their label. */
  readonly key: string;

  constructor(seed: number | string) {
    this.key = String(seed);
    [this.a, this.b, this.c, this.d] = cyrb128(this.key);
    // sfc32 needs a few rounds before its output is well mixed.
    for (let i = 0; i < 15; i++) this.uint32();
  }

  /** An independent stream for a named part of the world. */
  fork(label: string): Rng {
    return new Rng(`${this.key}/${label}`);
  }

  uint32(): number {
    this.a |= 0;
    this.b |= 0;
    this.c |= 0;
    this.d |= 0;
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.uint32() / 4294967296;
  }

  /** Uniform float in [min, max). */
  float(min = 0, max = 1): number {
    return min + (max - min) * this.next();
  }

  /** Uniform integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  bool(p = 0.5): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)];
  }

  /** Picks items[i] with probability weights[i] / sum(weights). */
  weighted<T>(items: readonly T[], weights: readonly number[]): T {
    let total = 0;
    for (const w of weights) total += w;
    if (!(total > 0)) throw new Error('weighted pick needs a positive total weight');
    let r = this.next() * total;
    for (let i = 0; i < items.length; i++) {
      r -= weights[i];
      if (r < 0) return items[i];
    }
    return items[items.length - 1];
  }

  /** Normal(mean, sd) by Box-Muller (one value per call keeps the stream simple to reason about). */
  normal(mean = 0, sd = 1): number {
    const u = 1 - this.next(); // (0, 1]: log(0) never happens
    const v = this.next();
    return mean + sd * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** Poisson(lambda): Knuth's method for small lambda, a rounded normal above 30. */
  poisson(lambda: number): number {
    if (!(lambda > 0)) return 0;
    if (lambda > 30) return Math.max(0, Math.round(this.normal(lambda, Math.sqrt(lambda))));
    const l = Math.exp(-lambda);
    let k = 0;
    let p = 1;
    // Bounded: the expected number of rounds is lambda + 1; 1,000 is far beyond any lambda <= 30.
    for (let i = 0; i < 1000; i++) {
      p *= this.next();
      if (p <= l) break;
      k++;
    }
    return k;
  }

  /** n lowercase hex digits. */
  hex(n: number): string {
    const codes = new Array<number>(n);
    let w = 0;
    for (let i = 0; i < n; i++) {
      if ((i & 7) === 0) w = this.uint32();
      codes[i] = HEX_CODES[w & 15];
      w >>>= 4;
    }
    // Built from char codes, not by +=: a flat string, where += leaves a deep tree of cons strings that the
    // garbage collector then copies around for as long as the world lives.
    return String.fromCharCode.apply(null, codes);
  }

  /** n decimal digits (leading zeros allowed). */
  digits(n: number): string {
    const codes = new Array<number>(n);
    for (let i = 0; i < n; i++) codes[i] = 48 + (this.uint32() % 10);
    return String.fromCharCode.apply(null, codes);
  }

  /** An identifier in the service's format: a short type prefix, an underscore, 32 lowercase hex digits. */
  id(prefix: string): string {
    return `${prefix}_${this.hex(32)}`;
  }

  /** n characters from an alphabet. */
  chars(n: number, alphabet: string): string {
    const codes = new Array<number>(n);
    for (let i = 0; i < n; i++) codes[i] = alphabet.charCodeAt(this.uint32() % alphabet.length);
    return String.fromCharCode.apply(null, codes);
  }
}
