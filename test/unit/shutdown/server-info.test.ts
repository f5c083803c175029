import { afterEach, describe, expect, jest, test } from '@jest/globals';
import { MAX_JSON_DEPTH, MAX_JSON_TOKENS, parseServerInfo } from '../../../src/shutdown/server-info';

const VERSION = 'abc/1.31.2/Clean/RELEASE/BoringSSL';
/** An answer whose node metadata nests `depth` levels in all (the top object is level 1). */
const nested = (depth: number) => `{"version":"${VERSION}","state":"LIVE","node":${'{"m":'.repeat(depth - 2)}{}${'}'.repeat(depth - 2)}}`;

describe('/server_info', () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });

  test("Envoy's fields are read, a repeated version is none, a quote escaped in a string is no end of it", () => {
    expect(parseServerInfo(JSON.stringify({ version: VERSION, state: 'DRAINING', uptime_current_epoch: '5s' }))).toEqual({ version: VERSION, state: 'DRAINING', uptime: '5s' });
    expect(parseServerInfo(`{"version":"${VERSION}","node":{"version":"x"},"ver\\u0073ion":"other"}`)).toEqual({});
    expect(parseServerInfo(`{"a":"\\"],{\\\\","version":"${VERSION}","b":"\\\\\\"version\\":"}`)).toEqual({ version: VERSION });
  });

  test('a hostile answer nested 100,000 deep is refused before it is parsed (JSON.parse never sees it)', () => {
    const parse = jest.spyOn(JSON, 'parse');
    for (const body of [`${'['.repeat(100_000)}${']'.repeat(100_000)}`, `{"version":"${VERSION}","x":${'{"y":'.repeat(100_000)}1${'}'.repeat(100_000)}}`]) {
      expect(parseServerInfo(body)).toEqual({});
      expect(parse.mock.calls.filter(([text]) => text === body)).toEqual([]);
    }
  });

  test(`nesting is read to ${MAX_JSON_DEPTH} levels, not one more`, () => {
    expect(parseServerInfo(nested(MAX_JSON_DEPTH))).toMatchObject({ version: VERSION, state: 'LIVE' });
    expect(parseServerInfo(nested(MAX_JSON_DEPTH + 1))).toEqual({});
  });

  test(`strings and brackets are read to ${MAX_JSON_TOKENS}, not more; an unclosed string is not read`, () => {
    const withItems = (items: number) => `{"version":"${VERSION}","list":[${Array.from({ length: items }, () => '"a"').join(',')}]}`;
    // `{`, two keys, the version, a comma, `[`, `]` and `}` with n items and n - 1 commas: 2n + 7 tokens.
    const most = (MAX_JSON_TOKENS - 7) >> 1;
    expect(parseServerInfo(withItems(most))).toMatchObject({ version: VERSION });
    expect(parseServerInfo(withItems(most + 1))).toEqual({});
    expect(parseServerInfo(`{"version":"${VERSION}","x":"unclosed}`)).toEqual({});
  });
});
