import { describe, expect, it } from 'vitest';
import {
  BUILTIN_CEILINGS,
  maxRequestBodyCeiling,
  maxResponseCeiling,
  resolveLimits,
} from '../../src/core/limits.js';
import type { LimitPolicy } from '../../src/core/types.js';

const MiB = 1024 * 1024;

/** Every layer sets response.maxMessageBytes to a distinct value, so the winner is visible by value and source. */
const layered: LimitPolicy = {
  defaults: {
    mode: 'enforce',
    request: { maxBodyBytes: 4 * MiB, maxMessageBytes: 1 * MiB },
    response: { maxMessageBytes: 4 * MiB },
    methods: {
      'tools/list': { response: { maxMessageBytes: 2 * MiB } },
      'tools/call': { request: { maxMessageBytes: 3 * MiB } },
    },
    tools: {
      export: { response: { maxMessageBytes: 16 * MiB } },
      upload: { request: { maxBodyBytes: 32 * MiB } },
    },
  },
  tenants: {
    acme: {
      limits: {
        mode: 'observe',
        response: { maxMessageBytes: 8 * MiB },
        methods: { 'tools/list': { response: { maxMessageBytes: 5 * MiB } } },
        tools: { export: { response: { maxMessageBytes: 24 * MiB } } },
      },
    },
    beta: {},
  },
};

describe('resolveLimits: layers and sources', () => {
  it('uses the defaults for a tenant without own limits', () => {
    const limits = resolveLimits(layered, { tenant: 'beta' });
    expect(limits).toEqual({
      mode: { value: 'enforce', source: 'limits.mode' },
      request: {
        maxBodyBytes: { value: 4 * MiB, source: 'limits.request.maxBodyBytes' },
        maxMessageBytes: { value: 1 * MiB, source: 'limits.request.maxMessageBytes' },
        maxBatchMessages: { value: 10_000, source: 'built-in default' },
        maxJsonDepth: { value: 1000, source: 'built-in default' },
      },
      response: {
        maxMessageBytes: { value: 4 * MiB, source: 'limits.response.maxMessageBytes' },
        toolCallRefusal: { value: 'error', source: 'built-in default' },
      },
    });
  });

  it('resolves response.toolCallRefusal like a ceiling: tenant tool > tool > tenant method > method > tenant > limits', () => {
    const choices: LimitPolicy = {
      defaults: {
        response: { toolCallRefusal: 'result' },
        tools: { export: { response: { toolCallRefusal: 'error' } } },
      },
      tenants: {
        acme: {
          limits: {
            response: { toolCallRefusal: 'error' },
            tools: { search: { response: { toolCallRefusal: 'result' } } },
          },
        },
      },
    };
    const refusal = (tenant: string, tool?: string) =>
      resolveLimits(choices, { tenant, method: 'tools/call', tool }).response.toolCallRefusal;
    expect(refusal('beta', 'search')).toEqual({ value: 'result', source: 'limits.response.toolCallRefusal' });
    expect(refusal('beta', 'export')).toEqual({
      value: 'error',
      source: 'limits.tools.export.response.toolCallRefusal',
    });
    expect(refusal('acme', 'other')).toEqual({
      value: 'error',
      source: 'tenants.acme.limits.response.toolCallRefusal',
    });
    expect(refusal('acme', 'search')).toEqual({
      value: 'result',
      source: 'tenants.acme.limits.tools.search.response.toolCallRefusal',
    });
    expect(resolveLimits({ defaults: {}, tenants: {} }, { tenant: 'x' }).response.toolCallRefusal).toEqual({
      value: 'error',
      source: 'built-in default',
    });
  });

  it("takes the tenant's own value over the defaults, key by key", () => {
    const limits = resolveLimits(layered, { tenant: 'acme', method: 'initialize' });
    expect(limits.response.maxMessageBytes).toEqual({
      value: 8 * MiB,
      source: 'tenants.acme.limits.response.maxMessageBytes',
    });
    expect(limits.request.maxBodyBytes).toEqual({ value: 4 * MiB, source: 'limits.request.maxBodyBytes' });
    expect(limits.mode).toEqual({ value: 'observe', source: 'tenants.acme.limits.mode' });
  });

  it('takes a method override of the defaults over the tenant base', () => {
    const limits = resolveLimits(layered, { tenant: 'beta', method: 'tools/list' });
    expect(limits.response.maxMessageBytes).toEqual({
      value: 2 * MiB,
      source: 'limits.methods.tools/list.response.maxMessageBytes',
    });
    // The method block sets only the response side; the request side falls through.
    expect(limits.request.maxMessageBytes.source).toBe('limits.request.maxMessageBytes');
  });

  it("takes the tenant's method override over the defaults' method override", () => {
    const limits = resolveLimits(layered, { tenant: 'acme', method: 'tools/list' });
    expect(limits.response.maxMessageBytes).toEqual({
      value: 5 * MiB,
      source: 'tenants.acme.limits.methods.tools/list.response.maxMessageBytes',
    });
  });

  it("takes a defaults' method override over the tenant's base value", () => {
    const limits = resolveLimits(layered, { tenant: 'acme', method: 'tools/call' });
    expect(limits.request.maxMessageBytes).toEqual({
      value: 3 * MiB,
      source: 'limits.methods.tools/call.request.maxMessageBytes',
    });
  });

  it('takes a tool override over every method and base layer', () => {
    const limits = resolveLimits(layered, { tenant: 'beta', method: 'tools/call', tool: 'export' });
    expect(limits.response.maxMessageBytes).toEqual({
      value: 16 * MiB,
      source: 'limits.tools.export.response.maxMessageBytes',
    });
    // Keys the tool block leaves unset come from the method layer, then the base.
    expect(limits.request.maxMessageBytes.source).toBe('limits.methods.tools/call.request.maxMessageBytes');
    expect(limits.request.maxBodyBytes.source).toBe('limits.request.maxBodyBytes');
  });

  it("takes the tenant's tool override over the defaults' tool override", () => {
    const limits = resolveLimits(layered, { tenant: 'acme', method: 'tools/call', tool: 'export' });
    expect(limits).toMatchObject({
      response: {
        maxMessageBytes: {
          value: 24 * MiB,
          source: 'tenants.acme.limits.tools.export.response.maxMessageBytes',
        },
      },
    });
  });

  it('applies tool layers only when a tool is named', () => {
    const limits = resolveLimits(layered, { tenant: 'beta', method: 'tools/call' });
    expect(limits.response.maxMessageBytes.source).toBe('limits.response.maxMessageBytes');
  });

  it('falls back to the defaults for a tenant the policy does not know', () => {
    const limits = resolveLimits(layered, { tenant: 'stranger', method: 'tools/list' });
    expect(limits.response.maxMessageBytes.source).toBe('limits.methods.tools/list.response.maxMessageBytes');
    expect(limits.mode.source).toBe('limits.mode');
  });

  it('does not mistake names of Object.prototype members for configured overrides', () => {
    const limits = resolveLimits(layered, { tenant: 'constructor', method: 'toString', tool: '__proto__' });
    expect(limits.response.maxMessageBytes).toEqual({
      value: 4 * MiB,
      source: 'limits.response.maxMessageBytes',
    });
    expect(limits.mode.source).toBe('limits.mode');
  });

  it('uses the built-in ceilings and enforce mode when nothing is configured', () => {
    const limits = resolveLimits({ defaults: {}, tenants: {} }, { tenant: 'default' });
    expect(limits.mode).toEqual({ value: 'enforce', source: 'built-in default' });
    expect(limits.request.maxBodyBytes).toEqual({
      value: BUILTIN_CEILINGS['request.maxBodyBytes'],
      source: 'built-in default',
    });
    expect(limits.request.maxMessageBytes).toEqual({
      value: BUILTIN_CEILINGS['request.maxMessageBytes'],
      source: 'built-in default',
    });
    expect(limits.response.maxMessageBytes).toEqual({
      value: BUILTIN_CEILINGS['response.maxMessageBytes'],
      source: 'built-in default',
    });
    expect(BUILTIN_CEILINGS).toEqual({
      'request.maxBodyBytes': 4 * MiB,
      'request.maxMessageBytes': 1 * MiB,
      'request.maxBatchMessages': 10_000,
      'request.maxJsonDepth': 1000,
      'response.maxMessageBytes': 4 * MiB,
    });
  });
});

describe('resolveLimits: 0 means no ceiling, hardMaxBytes caps everything', () => {
  const unbounded: LimitPolicy = {
    defaults: {
      response: { maxMessageBytes: 0 },
      tools: { big: { response: { maxMessageBytes: 64 * MiB } } },
    },
    tenants: { acme: { limits: { tools: { big: { response: { maxMessageBytes: 0 } } } } } },
  };

  it('turns 0 into value: null at whatever layer wins', () => {
    expect(resolveLimits(unbounded, { tenant: 'x' }).response.maxMessageBytes).toEqual({
      value: null,
      source: 'limits.response.maxMessageBytes',
    });
    expect(resolveLimits(unbounded, { tenant: 'acme', tool: 'big' }).response.maxMessageBytes).toEqual({
      value: null,
      source: 'tenants.acme.limits.tools.big.response.maxMessageBytes',
    });
    expect(resolveLimits(unbounded, { tenant: 'x', tool: 'big' }).response.maxMessageBytes.value).toBe(
      64 * MiB,
    );
  });

  it('clamps "no ceiling" and larger ceilings to hardMaxBytes and says where the value was clamped from', () => {
    const capped: LimitPolicy = { ...unbounded, defaults: { ...unbounded.defaults, hardMaxBytes: 32 * MiB } };
    expect(resolveLimits(capped, { tenant: 'acme', tool: 'big' }).response.maxMessageBytes).toEqual({
      value: 32 * MiB,
      source: 'limits.hardMaxBytes (clamped from tenants.acme.limits.tools.big.response.maxMessageBytes)',
    });
    expect(resolveLimits(capped, { tenant: 'x', tool: 'big' }).response.maxMessageBytes).toEqual({
      value: 32 * MiB,
      source: 'limits.hardMaxBytes (clamped from limits.tools.big.response.maxMessageBytes)',
    });
    // Values under the cap are untouched.
    expect(resolveLimits(capped, { tenant: 'x' }).request.maxMessageBytes).toEqual({
      value: 1 * MiB,
      source: 'built-in default',
    });
  });

  it('clamps built-in defaults too', () => {
    const tiny: LimitPolicy = { defaults: { hardMaxBytes: 1000 }, tenants: {} };
    expect(resolveLimits(tiny, { tenant: 'x' }).request.maxBodyBytes).toEqual({
      value: 1000,
      source: 'limits.hardMaxBytes (clamped from built-in default)',
    });
  });

  it('ignores a hardMaxBytes set in a tenant layer (it is global)', () => {
    const policy: LimitPolicy = { defaults: {}, tenants: { acme: { limits: { hardMaxBytes: 10 } } } };
    expect(resolveLimits(policy, { tenant: 'acme' }).response.maxMessageBytes.value).toBe(4 * MiB);
  });
});

describe('largest reachable ceilings', () => {
  it('is the largest response ceiling over base, methods and tools of the tenant', () => {
    expect(maxResponseCeiling(layered, 'acme')).toBe(24 * MiB);
    expect(maxResponseCeiling(layered, 'beta')).toBe(16 * MiB);
    expect(maxResponseCeiling(layered, 'stranger')).toBe(16 * MiB);
  });

  it('is the base ceiling when nothing overrides it', () => {
    const plain: LimitPolicy = { defaults: { response: { maxMessageBytes: 2 * MiB } }, tenants: {} };
    expect(maxResponseCeiling(plain, 'x')).toBe(2 * MiB);
  });

  it('sees a method override that raises the ceiling, and one set only by the tenant', () => {
    const policy: LimitPolicy = {
      defaults: { response: { maxMessageBytes: 1 * MiB } },
      tenants: {
        acme: { limits: { methods: { 'resources/read': { response: { maxMessageBytes: 9 * MiB } } } } },
      },
    };
    expect(maxResponseCeiling(policy, 'acme')).toBe(9 * MiB);
    expect(maxResponseCeiling(policy, 'other')).toBe(1 * MiB);
  });

  it('is null when some path has no ceiling, unless hardMaxBytes caps it', () => {
    const policy: LimitPolicy = {
      defaults: { tools: { big: { response: { maxMessageBytes: 0 } } } },
      tenants: {},
    };
    expect(maxResponseCeiling(policy, 'x')).toBeNull();
    expect(
      maxResponseCeiling({ ...policy, defaults: { ...policy.defaults, hardMaxBytes: 50 * MiB } }, 'x'),
    ).toBe(50 * MiB);
  });

  it('covers request body ceilings the same way', () => {
    expect(maxRequestBodyCeiling(layered, 'beta')).toBe(32 * MiB);
    const noBodyCeiling: LimitPolicy = { defaults: { request: { maxBodyBytes: 0 } }, tenants: {} };
    expect(maxRequestBodyCeiling(noBodyCeiling, 'x')).toBeNull();
  });

  it('agrees with resolveLimits: no resolvable ceiling is above the maximum', () => {
    const max = maxResponseCeiling(layered, 'acme') ?? Number.POSITIVE_INFINITY;
    for (const method of [undefined, 'tools/list', 'tools/call', 'resources/read']) {
      for (const tool of [undefined, 'export', 'upload', 'other']) {
        const bytes = resolveLimits(layered, { tenant: 'acme', method, tool }).response.maxMessageBytes.value;
        expect(bytes ?? Number.POSITIVE_INFINITY).toBeLessThanOrEqual(max);
      }
    }
  });
});

describe('resolved limits are cached per policy', () => {
  it('the same query on the same policy is resolved once; a new policy (a reload) resolves anew', () => {
    const policy: LimitPolicy = {
      defaults: { response: { maxMessageBytes: 100 }, tools: { t: { response: { maxMessageBytes: 50 } } } },
      tenants: {},
    };
    const first = resolveLimits(policy, { tenant: 'a', method: 'tools/call', tool: 't' });
    expect(resolveLimits(policy, { tenant: 'a', method: 'tools/call', tool: 't' })).toBe(first);
    expect(Object.isFrozen(first.response.maxMessageBytes)).toBe(true);
    expect(resolveLimits(policy, { tenant: 'a', method: 'tools/call', tool: undefined })).not.toBe(first);
    const reloaded: LimitPolicy = { defaults: { response: { maxMessageBytes: 200 } }, tenants: {} };
    expect(
      resolveLimits(reloaded, { tenant: 'a', method: 'tools/call', tool: 't' }).response.maxMessageBytes
        .value,
    ).toBe(200);
  });

  it('names from the wire cannot grow it without bound, and still resolve right', () => {
    const policy: LimitPolicy = {
      defaults: {
        response: { maxMessageBytes: 100 },
        tools: { big: { response: { maxMessageBytes: 1000 } } },
      },
      tenants: {},
    };
    const unnamed = resolveLimits(policy, { tenant: 'a', method: 'tools/call' });
    // A name no block lists is not kept: it resolves to the very entry of no name at all.
    for (let i = 0; i < 10_000; i++) {
      const tool = `t${i}-${'x'.repeat(1000)}`;
      expect(resolveLimits(policy, { tenant: 'a', method: 'tools/call', tool })).toBe(unnamed);
      expect(resolveLimits(policy, { tenant: `stranger${i}`, method: `m${i}`, tool })).toBe(
        resolveLimits(policy, { tenant: 'nobody' }),
      );
    }
    expect(
      resolveLimits(policy, { tenant: 'a', method: 'tools/call', tool: 'big' }).response.maxMessageBytes
        .value,
    ).toBe(1000);
    expect(
      resolveLimits(policy, { tenant: 'a', method: 'tools/call', tool: 't1' }).response.maxMessageBytes.value,
    ).toBe(100);
  });
});
