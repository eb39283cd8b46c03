// The filter chain without sockets: the order filters are asked in, which answer decides, and what a filter
// that throws or rejects costs (a log line under its name, never the exchange).
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { edgeAnswer } from '../../src/core/refusals/answers.js';
import { runtimeOf, startExchange } from '../../src/exchange/exchange.js';
import { messageSizeCheck } from '../../src/inspect/message-verdict.js';
import { filterChainOf } from '../../src/proxy/filters/chosen.js';
import type { ExchangeFilter, ExchangeRequest } from '../../src/proxy/filters/exchange-filter.js';
import { FilterChain } from '../../src/proxy/filters/filter-chain.js';
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
const tooMany = edgeAnswer('quota_store_unavailable', { retryAfterSeconds: 3 }, 1);

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

  it('asks every message through the rules in order: the first refusal of a message decides it, a throw refuses it with the edge failure', () => {
    const messages = [1, 2, 3].map((id) => ({
      kind: 'request' as const,
      id,
      method: 'tools/call',
      tool: `t${id}`,
      prompt: undefined,
      resourceUri: undefined,
      bytes: 1,
      continues: false,
    }));
    const asked: string[] = [];
    const { chain, exchange, log } = chainOf([
      {
        name: 'first',
        requestMessage: (_exchange, m) => {
          asked.push(`first:${m.id}`);
          return m.id === 2 ? tooMany : undefined;
        },
      },
      {
        name: 'second',
        requestMessage: (_exchange, m) => {
          asked.push(`second:${m.id}`);
          if (m.id === 3) throw new Error('rule bug');
          return undefined;
        },
      },
    ]);
    expect(chain.requestMessages(exchange, { ...request, messages: messages.slice(0, 1) })).toBeUndefined();
    asked.length = 0;
    const verdicts = chain.requestMessages(exchange, { ...request, batch: true, messages });
    expect(asked).toEqual(['first:1', 'second:1', 'first:2', 'first:3', 'second:3']);
    expect(verdicts?.[0]).toBeUndefined();
    expect(verdicts?.[1]).toBe(tooMany);
    expect(verdicts?.[2]).toMatchObject({ status: 500, outcome: 'edge_failure' });
    expect(log.records().map((line) => [line.filter, line.hook])).toEqual([['second', 'requestMessage']]);
  });

  it('charges only once every request hook let the exchange on, and not after a refusal', async () => {
    const asked: string[] = [];
    const charging = (name: string, answer?: typeof tooMany): ExchangeFilter => ({
      name,
      charge: async () => {
        asked.push(`charge:${name}`);
        return answer;
      },
    });
    const deciding = (name: string, answer?: typeof tooMany): ExchangeFilter => ({
      name,
      request: () => {
        asked.push(`request:${name}`);
        return answer;
      },
    });
    const agreed = chainOf([charging('quota'), deciding('a'), charging('second'), deciding('b')]);
    expect(await agreed.chain.request(agreed.exchange, request)).toBeUndefined();
    expect(asked).toEqual(['request:a', 'request:b', 'charge:quota', 'charge:second']);

    asked.length = 0;
    const refusedLater = chainOf([charging('quota'), deciding('a'), deciding('b', tooMany)]);
    expect(await refusedLater.chain.request(refusedLater.exchange, request)).toBe(tooMany);
    expect(asked).toEqual(['request:a', 'request:b']);

    asked.length = 0;
    const quotaRefuses = chainOf([charging('quota', tooMany), deciding('a'), charging('second')]);
    expect(await quotaRefuses.chain.request(quotaRefuses.exchange, request)).toBe(tooMany);
    expect(asked).toEqual(['request:a', 'charge:quota']);
  });
});
