import { describe, expect, it } from 'vitest';
import { repeatedKeyOf, repeatedTopLevelKey } from '../webhook/keys.ts';

const scan = (s: string) => repeatedTopLevelKey(Buffer.from(s));

describe('repeated top-level keys of an event', () => {
  it.each([
    ['{"event_guid":"A","event_type":"t","event_guid":"B"}', 'event_guid'],
    ['{"a":1,"b":2,"a":3}', 'a'],
    ['{"a":1,"a":1}', 'a'],
    [' {\n "x" : {"a":1} ,\r\n "x":[1] } ', 'x'],
    ['{"event\\u005fguid":"A","event_guid":"B"}', 'event_guid'],
    ['{"é":1,"\\u00e9":2}', 'é'],
    ['{"q\\"k":1,"q\\"k":2}', 'q"k'],
    ['{"s":"a\\\\","s":"b"}', 's'],
  ])('finds the repeated key in %s', (body, key) => {
    expect(() => JSON.parse(body)).not.toThrow();
    expect(scan(body)).toBe(key);
    expect(repeatedKeyOf(Buffer.from(body), JSON.parse(body))).toBe(key);
  });

  it.each([
    '{}',
    '{"a":1}',
    '{"a":1,"b":{"a":2,"a":3}}', // nested repeats are the payload's business
    '{"list":[{"k":1},{"k":2}],"k":3}',
    '{"s":"\\",\\"s\\":","t":"x"}', // a key's text inside a string value
    '{"s":"\\\\","a":"\\\\\\"","b":1}',
    '{"a":"{","b":"[","c":"]}","d":1}',
    '{"__proto__":1,"constructor":2}',
  ])('finds none in %s', (body) => {
    expect(() => JSON.parse(body)).not.toThrow();
    expect(scan(body)).toBeNull();
    expect(repeatedKeyOf(Buffer.from(body), JSON.parse(body))).toBeNull();
  });
});
