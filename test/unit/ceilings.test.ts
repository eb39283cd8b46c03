// The ceilings table, its count ceiling request.maxBatchMessages and its nesting ceiling request.maxJsonDepth,
// explain's sources, without sockets.
import { describe, expect, it } from 'vitest';
import { formatExplanation } from '../../src/config/explain.js';
import { limitPolicyOf, parseConfigText } from '../../src/config/load.js';
import { formatEffectiveConfig } from '../../src/config/print.js';
import { CEILING_CHOICES, CEILINGS, describeCeilingValue } from '../../src/core/ceilings.js';
import { resolveLimits } from '../../src/core/limits.js';
import { ceilingError, toolCallRefusal } from '../../src/core/refusals/answers.js';
import type { LimitMode, LimitPolicy } from '../../src/core/types.js';
import { type JudgeContext, messageSizeCheck } from '../../src/inspect/message-verdict.js';
import { ExchangeSummary } from '../../src/inspect/observer.js';
import { judgeRequestBody } from '../../src/inspect/request-body.js';
import { CEILING_CHECKS } from '../../src/proxy/filters/ceilings.js';
import { nestedCall } from '../support/json-samples.js';

function batch(n: number): Uint8Array {
  const one = '{"jsonrpc":"2.0","method":"notifications/x"}';
  return new TextEncoder().encode(`[${Array.from({ length: n }, () => one).join(',')}]`);
}

function requestContext(policy: LimitPolicy, mode: LimitMode, summary: ExchangeSummary): JudgeContext {
  return {
    direction: 'request',
    tenant: 'default',
    policy,
    mode,
    observer: summary,
    answered: undefined,
    answeredInSession: undefined,
    remember: undefined,
    checks: CEILING_CHECKS,
  };
}

const policy: LimitPolicy = {
  defaults: { request: { maxBodyBytes: 64 * 1024 * 1024, maxMessageBytes: 1024 * 1024 } },
  tenants: {},
};

describe('request.maxBatchMessages', () => {
  it('refuses a 100,000-message batch before parsing any of its messages, with the contract error', () => {
    const summary = new ExchangeSummary();
    const verdict = judgeRequestBody(requestContext(policy, 'enforce', summary), batch(100_000));
    expect(verdict.ok).toBe(false);
    if (verdict.ok) return;
    expect(verdict.refusal.status).toBe(413);
    expect(JSON.parse(verdict.refusal.body)).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: -32600,
        message:
          'Request batch is 100,000 messages, over the request.maxBatchMessages limit of 10,000 messages set by the mcp-edge operator for tenant "default"',
        data: {
          reason: 'limit_exceeded',
          direction: 'request',
          limit: 'request.maxBatchMessages',
          limitMessages: 10_000,
          observedMessages: 100_000,
          observedMessagesIsLowerBound: false,
          tenant: 'default',
          enforcedBy: 'mcp-edge',
        },
      },
    });
    // Not one message was measured: the batch was counted from its structure.
    expect(summary.requestMessages).toBe(0);
    expect(summary.violations).toEqual([
      { limit: 'request.maxBatchMessages', action: 'rejected', observed: 100_000, id: null },
    ]);
  });

  it('passes a batch at the ceiling, and in observe mode records one over it and forwards it', () => {
    expect(judgeRequestBody(requestContext(policy, 'enforce', new ExchangeSummary()), batch(10_000)).ok).toBe(
      true,
    );
    const observing = new ExchangeSummary();
    expect(judgeRequestBody(requestContext(policy, 'observe', observing), batch(10_001)).ok).toBe(true);
    expect(observing.violations).toEqual([
      { limit: 'request.maxBatchMessages', action: 'observed', observed: 10_001, id: null },
    ]);
  });

  it('is set per tenant (0: no ceiling), never per method or tool: a batch has no one method', () => {
    const { config } = parseConfigText(
      [
        'upstream: { url: http://127.0.0.1:3000/mcp }',
        'limits: { request: { maxBatchMessages: 50 } }',
        'tenants: { acme: { limits: { request: { maxBatchMessages: 0 } } } }',
      ].join('\n'),
      'edge.yaml',
      {},
    );
    expect(config.limits.request.maxBatchMessages).toBe(50);
    const tenantPolicy: LimitPolicy = {
      defaults: config.limits,
      tenants: config.tenants as LimitPolicy['tenants'],
    };
    expect(resolveLimits(tenantPolicy, { tenant: 'default' }).request.maxBatchMessages).toEqual({
      value: 50,
      source: 'limits.request.maxBatchMessages',
    });
    expect(resolveLimits(tenantPolicy, { tenant: 'acme' }).request.maxBatchMessages.value).toBeNull();
    expect(() =>
      parseConfigText(
        'upstream: { url: http://127.0.0.1:3000/mcp }\nlimits: { tools: { t: { request: { maxBatchMessages: 5 } } } }',
        'edge.yaml',
        {},
      ),
    ).toThrow(/maxBatchMessages/);
    expect(() =>
      parseConfigText(
        'upstream: { url: http://127.0.0.1:3000/mcp }\nlimits: { request: { maxBatchMessages: 1KiB } }',
        'edge.yaml',
        {},
      ),
    ).toThrow(/whole number of messages/);
  });
});

const nested = (depth: number) => new TextEncoder().encode(nestedCall(7, depth));

describe('request.maxJsonDepth', () => {
  it('refuses a body one level past 1,000 as an invalid request (400), naming the ceiling and the message it could read', () => {
    const summary = new ExchangeSummary();
    expect(judgeRequestBody(requestContext(policy, 'enforce', summary), nested(1000)).ok).toBe(true);
    const verdict = judgeRequestBody(requestContext(policy, 'enforce', summary), nested(1001));
    expect(verdict.ok).toBe(false);
    if (verdict.ok) return;
    expect(verdict.refusal.status).toBe(400);
    expect(JSON.parse(verdict.refusal.body)).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: {
        code: -32600,
        message:
          'JSON nesting in the request body is 1,001 levels, over the request.maxJsonDepth limit of 1,000 levels set by the mcp-edge operator for tenant "default"',
        data: {
          reason: 'invalid_request',
          direction: 'request',
          limit: 'request.maxJsonDepth',
          limitLevels: 1000,
          observedLevels: 1001,
          observedLevelsIsLowerBound: false,
          tenant: 'default',
          method: 'tools/call',
          tool: 'deep',
          enforcedBy: 'mcp-edge',
        },
      },
    });
    expect(summary.violations).toEqual([
      { limit: 'request.maxJsonDepth', action: 'rejected', observed: 1001, id: 7 },
    ]);
  });

  it('counts a batch array as a level, and empty containers and brackets in strings as JSON does', () => {
    const at = (depth: number, body: string) =>
      judgeRequestBody(
        requestContext(
          { defaults: { request: { maxJsonDepth: depth } }, tenants: {} },
          'enforce',
          new ExchangeSummary(),
        ),
        new TextEncoder().encode(body),
      ).ok;
    const call = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[{}],"s":"[[[[{{{{"}}';
    expect(at(4, call)).toBe(true);
    expect(at(3, call)).toBe(false);
    expect(at(5, `[${call}]`)).toBe(true);
    expect(at(4, `[${call}]`)).toBe(false);
  });

  it('is the configured value, per tenant (0: no ceiling), and in observe mode is counted, not enforced', () => {
    const { config } = parseConfigText(
      [
        'upstream: { url: http://127.0.0.1:3000/mcp }',
        'limits: { request: { maxJsonDepth: 10 } }',
        'tenants: { acme: { limits: { request: { maxJsonDepth: 0 } } } }',
      ].join('\n'),
      'edge.yaml',
      {},
    );
    const configured: LimitPolicy = {
      defaults: config.limits,
      tenants: config.tenants as LimitPolicy['tenants'],
    };
    const ctx = (tenant: string, mode: LimitMode, summary = new ExchangeSummary()) => ({
      ...requestContext(configured, mode, summary),
      tenant,
    });
    expect(judgeRequestBody(ctx('default', 'enforce'), nested(10)).ok).toBe(true);
    expect(judgeRequestBody(ctx('default', 'enforce'), nested(11)).ok).toBe(false);
    expect(judgeRequestBody(ctx('acme', 'enforce'), nested(5000)).ok).toBe(true);
    const observing = new ExchangeSummary();
    expect(judgeRequestBody(ctx('default', 'observe', observing), nested(11)).ok).toBe(true);
    expect(observing.violations).toEqual([
      { limit: 'request.maxJsonDepth', action: 'observed', observed: 11, id: 7 },
    ]);
    expect(() =>
      parseConfigText(
        'upstream: { url: http://127.0.0.1:3000/mcp }\nlimits: { methods: { m: { request: { maxJsonDepth: 5 } } } }',
        'edge.yaml',
        {},
      ),
    ).toThrow(/maxJsonDepth/);
    expect(() =>
      parseConfigText(
        'upstream: { url: http://127.0.0.1:3000/mcp }\nlimits: { request: { maxJsonDepth: 1.5 } }',
        'edge.yaml',
        {},
      ),
    ).toThrow(/whole number of levels/);
  });

  it('explain and the config printer show it in levels', () => {
    const configured: LimitPolicy = { defaults: { request: { maxJsonDepth: 64 } }, tenants: {} };
    const query = { tenant: 'default' };
    const explained = formatExplanation(query, resolveLimits(configured, query), false);
    expect(explained).toMatch(/request\.maxJsonDepth +64 levels +from limits\.request\.maxJsonDepth/);
    const loaded = parseConfigText('upstream: { url: http://127.0.0.1:3000/mcp }', 'edge.yaml', {});
    expect(formatEffectiveConfig(loaded)).toMatch(/maxJsonDepth: 1000 # 1,000 levels/);
  });

  it('a body that is not JSON is refused for that, however deep it nests', () => {
    const verdict = judgeRequestBody(
      requestContext(policy, 'enforce', new ExchangeSummary()),
      new TextEncoder().encode(`${'['.repeat(5000)}x`),
    );
    expect(verdict.ok).toBe(false);
    if (!verdict.ok) expect(JSON.parse(verdict.refusal.body).error.code).toBe(-32700);
  });
});

describe('the table', () => {
  it('every ceiling has a unique config path, a unit and a built-in value, and errors speak its unit', () => {
    expect(new Set(CEILINGS.map((c) => c.name)).size).toBe(CEILINGS.length);
    for (const c of CEILINGS) expect(c.name).toBe(`${c.direction}.${c.key}`);
    expect(describeCeilingValue({ unit: 'messages' }, 1234)).toBe('1,234 messages');
    expect(describeCeilingValue({ unit: 'bytes' }, 2048)).toBe('2,048 bytes (2.00 KiB)');
    expect(describeCeilingValue({ unit: 'levels' }, 1000)).toBe('1,000 levels');
    const body = ceilingError({
      limit: 'response.maxMessageBytes',
      direction: 'response',
      limitValue: 1024,
      observedValue: 2048,
      observedIsLowerBound: true,
      tenant: 't',
      method: 'tools/call',
      tool: 'x',
      id: 3,
    });
    expect(body.error.data).toMatchObject({
      limitBytes: 1024,
      observedBytes: 2048,
      observedBytesIsLowerBound: true,
    });
    expect(body.error.message).toMatch(/^Response message \(tools\/call "x"\) is at least 2,048 bytes/);
  });
});

describe('message checks', () => {
  it('the size check trips one byte over its ceiling, for the subject the message is about', () => {
    const sized: LimitPolicy = {
      defaults: {
        response: { maxMessageBytes: 100 },
        tools: { big: { response: { maxMessageBytes: 1000 } } },
      },
      tenants: {},
    };
    const ctx = {
      ...requestContext(sized, 'enforce', new ExchangeSummary()),
      direction: 'response' as const,
    };
    const message = (bytes: number, tool: string) => ({
      kind: 'result' as const,
      id: 1,
      subject: { method: 'tools/call', tool },
      bytes,
      bytesIsLowerBound: false,
    });
    expect(CEILING_CHECKS).toContain(messageSizeCheck);
    expect(messageSizeCheck(ctx, message(100, 'small'))).toBeUndefined();
    expect(messageSizeCheck(ctx, message(101, 'small'))).toMatchObject({
      limit: 'response.maxMessageBytes',
      limitValue: 100,
      observedValue: 101,
      tool: 'small',
    });
    expect(messageSizeCheck(ctx, message(1000, 'big'))).toBeUndefined();
  });
});

describe('explain names a built-in default as such', () => {
  const explain = (yamlText: string) => {
    const { config } = parseConfigText(yamlText, 'edge.yaml', {});
    const query = { tenant: 'default', method: 'tools/call' };
    return formatExplanation(query, resolveLimits(limitPolicyOf(config), query), false);
  };

  it('a key the file leaves out is "from built-in default"; one it sets, from its path', () => {
    const unset = explain(
      'upstream: { url: http://127.0.0.1:3000/mcp }\nlimits: { request: { maxMessageBytes: 64KiB } }',
    );
    expect(unset).toMatch(/\n {2}mode +enforce +from built-in default\n/);
    expect(unset).toMatch(
      /\n {2}request\.maxBodyBytes +4,194,304 bytes \(4\.00 MiB\) +from built-in default\n/,
    );
    expect(unset).toMatch(
      /\n {2}request\.maxMessageBytes +65,536 bytes \(64\.0 KiB\) +from limits\.request\.maxMessageBytes\n/,
    );
    expect(unset).toMatch(/\n {2}response\.toolCallRefusal +error +from built-in default\n/);
    const set = explain(
      'upstream: { url: http://127.0.0.1:3000/mcp }\nlimits: { mode: enforce, request: { maxBodyBytes: 4MiB }, response: { toolCallRefusal: result } }',
    );
    expect(set).toMatch(/\n {2}mode +enforce +from limits\.mode\n/);
    expect(set).toMatch(
      /\n {2}request\.maxBodyBytes +4,194,304 bytes \(4\.00 MiB\) +from limits\.request\.maxBodyBytes\n/,
    );
    expect(set).toMatch(/\n {2}response\.toolCallRefusal +result +from limits\.response\.toolCallRefusal\n/);
  });
});

describe('response.toolCallRefusal', () => {
  const violation = {
    limit: 'response.maxMessageBytes' as const,
    direction: 'response' as const,
    limitValue: 1024,
    observedValue: 2048,
    observedIsLowerBound: true,
    tenant: 't',
    method: 'tools/call',
    tool: 'x',
    id: 3,
  };

  it('is a choice of the table beside the ceilings, with its built-in value among its values', () => {
    for (const c of CEILING_CHOICES) {
      expect(c.name).toBe(`${c.direction}.${c.key}`);
      expect(c.values).toContain(c.builtin);
      expect(CEILINGS.map((ceiling) => ceiling.name)).not.toContain(c.name);
    }
    expect(CEILING_CHOICES.map((c) => c.name)).toEqual(['response.toolCallRefusal']);
  });

  it('result: the error message as a tool error result, resultType from 2026-07-28; error: the error itself', () => {
    const error = ceilingError(violation);
    expect(toolCallRefusal(error, 'error', '2026-07-28')).toBe(error);
    expect(toolCallRefusal(error, 'result', '2025-11-25')).toEqual({
      jsonrpc: '2.0',
      id: 3,
      result: { isError: true, content: [{ type: 'text', text: error.error.message }] },
    });
    expect(toolCallRefusal(error, 'result', undefined)).not.toHaveProperty('result.resultType');
    expect(toolCallRefusal(error, 'result', '2026-07-28')).toEqual({
      jsonrpc: '2.0',
      id: 3,
      result: {
        resultType: 'complete',
        isError: true,
        content: [{ type: 'text', text: error.error.message }],
      },
    });
  });

  it('the error of an answer says what to do: a tool call asks for less, another method names the key', () => {
    expect(ceilingError(violation).error.message).toContain('Call the tool again for less');
    const listing = ceilingError({ ...violation, method: 'tools/list', tool: undefined });
    expect(listing.error.message).toMatch(
      /; mcp-edge replaced the answer whole\. If answers this large are expected, the mcp-edge operator can raise response\.maxMessageBytes for tools\/list\.$/,
    );
    // A request refused is the client's to shrink: its words are unchanged.
    const request = ceilingError({
      ...violation,
      limit: 'request.maxMessageBytes',
      direction: 'request',
    });
    expect(request.error.message).toMatch(/set by the mcp-edge operator for tenant "t"$/);
  });
});
