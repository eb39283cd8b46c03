// The filter chain without sockets: the order filters are asked in, which answer decides, and what a filter
// that throws or rejects costs (a log line under its name, never the exchange).
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { edgeRefusal } from '../../src/core/errors.js';
import { runtimeOf, startExchange } from '../../src/exchange/exchange.js';
import { messageSizeCheck } from '../../src/inspect/message-verdict.js';
import { filterChainOf } from '../../src/proxy/filters/chosen.js';
import {
  type ExchangeFilter,
  type ExchangeRequest,
  FilterChain,
} from '../../src/proxy/filters/exchange-filter.js';
import { createLogger } from '../../src/run.js';
import { capturedLog } from '../support/start-edge.js';

const { config } = parseConfigText('upstream: { url: http://127.0.0.1:3000/mcp }', 'edge.yaml', {});
const runtime = runtimeOf(config);
const request: ExchangeRequest = {
  headers: {},
  messages: [],
  batch: false,
  bytes: 0,
  session: undefined,
  setUpstreamHeader() {},
  setUpstreamMeta() {},
};
const tooMany = edgeRefusal(429, 'invalid_request', 'later', 1, { 'retry-after': '3' });

function chainOf(filters: ExchangeFilter[]) {
  const log = capturedLog();
  const chain = new FilterChain(filters, createLogger('info', log.sink));
  return { chain, exchange: startExchange(runtime, 'default', undefined, chain), log };
}

describe('the filter chain', () => {
  it("asks request hooks in order: the first refusal decides, a throw or rejection is logged with the filter's name", async () => {
    const asked: string[] = [];
    const { chain, exchange, log } = chainOf([
      {
        name: 'throws',
        request: () => {
          asked.push('throws');
          throw new Error('bug');
        },
      },
      {
        name: 'rejects',
        request: async () => {
          asked.push('rejects');
          throw new Error('store down');
        },
      },
      {
        name: 'refuses',
        request: () => {
          asked.push('refuses');
          return tooMany;
        },
      },
      { name: 'after', request: () => void asked.push('after') },
    ]);
    expect(await chain.request(exchange, request)).toBe(tooMany);
    expect(asked).toEqual(['throws', 'rejects', 'refuses']);
    expect(
      log.records().map((line) => [line.filter, line.hook, (line.err as { message: string }).message]),
    ).toEqual([
      ['throws', 'request', 'bug'],
      ['rejects', 'request', 'store down'],
    ]);
  });

  it('stays synchronous when no filter waits, and lets the exchange on when none refuses', () => {
    const { chain, exchange } = chainOf([{ name: 'watch', request: () => undefined }]);
    expect(chain.request(exchange, request)).toBeUndefined();
  });

  it("gathers the filters' checks in order; the edge's chain starts with the ceilings", () => {
    const first = () => undefined;
    const { chain } = chainOf([
      { name: 'a', checks: [first] },
      { name: 'b' },
      { name: 'c', checks: [messageSizeCheck] },
    ]);
    expect(chain.checks).toEqual([first, messageSizeCheck]);
    const edge = filterChainOf({ config, metrics: undefined, log: createLogger('silent') });
    expect(edge.checks).toContain(messageSizeCheck);
    // No filter of the edge's own watches events or answers: the relays skip those calls.
    expect(edge.streamEvent).toBeUndefined();
    expect(edge.responseMessage).toBeUndefined();
  });

  it("wraps a filter's observer, so a throw in it is logged and the others still see the message", () => {
    const seen: string[] = [];
    const observer = {
      message: () => {
        throw new Error('observer bug');
      },
      limitExceeded: () => {},
      unparsable: () => {},
    };
    const { chain, log } = chainOf([
      { name: 'broken', observe: () => [observer] },
      {
        name: 'fine',
        observe: () => [{ message: () => void seen.push('fine'), limitExceeded() {}, unparsable() {} }],
      },
    ]);
    const a = startExchange(runtime, 'default', undefined, chain);
    const b = startExchange(runtime, 'default', undefined, chain);
    a.observer.message('response', { envelopeBytes: 1 } as never, { method: undefined, tool: undefined });
    b.observer.message('response', { envelopeBytes: 1 } as never, { method: undefined, tool: undefined });
    expect(seen).toEqual(['fine', 'fine']);
    expect(log.records().map((line) => [line.filter, line.hook])).toEqual([
      ['broken', 'observe.message'],
      ['broken', 'observe.message'],
    ]);
  });
});
