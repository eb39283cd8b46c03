// Admission: which requests become exchanges, and which are refused before anything is read or sent
// upstream (method, Host, Origin, credentials). Every exchange, refused or not, gets its tenant here.
import type { IncomingHttpHeaders } from 'node:http';
import { headerValue } from '../core/headers.js';
import { type EdgeHttpError, edgeAnswer } from '../core/refusals/answers.js';
import { type EdgeRuntime, type Exchange, startExchange } from '../exchange/exchange.js';
import type { TenantDecision } from '../tenancy/tenant-resolver.js';
import { FORWARDED_METHODS } from '../upstream/upstream.js';
import type { EdgeContext } from './edge-context.js';
import { hostOriginRefusal } from './host-origin.js';

const ALLOW = FORWARDED_METHODS.join(', ');

/** What admission looks at: a request's method, headers and peer, nothing of Fastify's. */
export interface AdmissionRequest {
  method: string;
  headers: IncomingHttpHeaders;
  /** The client connection's remote address. */
  peer: string | undefined;
}

/** An admitted exchange, or a refusal with the exchange it is logged and counted under. */
export type Admission =
  | { ok: true; exchange: Exchange }
  | { ok: false; exchange: Exchange; refusal: EdgeHttpError };

/** Why this request may not reach the upstream whatever its tenant, or undefined. */
function refusalBeforeTenant(runtime: EdgeRuntime, request: AdmissionRequest): EdgeHttpError | undefined {
  if (!FORWARDED_METHODS.some((m) => m === request.method)) {
    return edgeAnswer('method_not_allowed', { allow: ALLOW });
  }
  return hostOriginRefusal(runtime, request.headers);
}

/**
 * Admits a request to the MCP endpoint as an exchange of its tenant, or refuses it (under the default tenant
 * when the tenant is not known, so the refusal is logged and counted).
 */
export function admit(
  ctx: Pick<EdgeContext, 'filters'> & Partial<Pick<EdgeContext, 'untrustedHeaders'>>,
  runtime: EdgeRuntime,
  request: AdmissionRequest,
): Admission | Promise<Admission> {
  const sessionId = headerValue(request.headers, 'mcp-session-id');
  const begin = (tenant: string) =>
    startExchange(
      runtime,
      tenant,
      sessionId,
      ctx.filters,
      headerValue(request.headers, 'user-agent'),
      headerValue(request.headers, 'mcp-protocol-version'),
    );
  /** The filters see every exchange; one not refused yet may be refused by them (a quota). */
  const decide = (
    exchange: Exchange,
    refusal: EdgeHttpError | undefined,
    untrustedTenantHeader: boolean,
  ): Admission => {
    if (untrustedTenantHeader) ctx.untrustedHeaders?.note(request.peer);
    const filtered = ctx.filters.admit(exchange, {
      untrustedTenantHeader,
      refused: refusal !== undefined,
      headers: request.headers,
    });
    const answer = refusal ?? filtered;
    return answer === undefined ? { ok: true, exchange } : { ok: false, exchange, refusal: answer };
  };
  const early = refusalBeforeTenant(runtime, request);
  if (early !== undefined) return decide(begin(runtime.defaultTenant), early, false);
  const admitAs = (decision: TenantDecision): Admission => {
    if (!decision.ok) {
      const refusal = edgeAnswer('unauthenticated', {
        detail: decision.message,
        wwwAuthenticate: decision.wwwAuthenticate,
      });
      const exchange = begin(runtime.defaultTenant);
      exchange.authFailure = decision.reason;
      return decide(exchange, refusal, decision.untrustedHeader);
    }
    return decide(begin(decision.tenant), undefined, decision.untrustedHeader);
  };
  // Synchronous unless a resolver must wait (a JWT's keys): no promise per request for the others.
  const decision = runtime.tenants.resolve(request.headers, request.peer);
  return decision instanceof Promise ? decision.then(admitAs) : admitAs(decision);
}
