// Admission: which requests become exchanges, and which are refused before anything is read or sent
// upstream (method, Host, Origin, credentials). Every exchange, refused or not, gets its tenant here.
import type { FastifyRequest } from 'fastify';
import { type EdgeHttpError, edgeRefusal } from '../core/errors.js';
import type { EdgeContext } from './edge-context.js';
import { EdgeError } from './edge-error.js';
import { type EdgeRuntime, type Exchange, startExchange } from './exchange.js';
import { headerValue } from './headers.js';
import { hostOriginRefusal } from './host-origin.js';

export const FORWARDED_METHODS = ['POST', 'GET', 'DELETE'] as const;
const ALLOW = FORWARDED_METHODS.join(', ');

/** Why this request may not reach the upstream whatever its tenant, or undefined. */
function refusalBeforeTenant(runtime: EdgeRuntime, request: FastifyRequest): EdgeHttpError | undefined {
  if (!FORWARDED_METHODS.some((m) => m === request.method)) {
    return edgeRefusal(
      405,
      'method_not_allowed',
      `Method not allowed: the MCP endpoint takes ${ALLOW}`,
      null,
      {
        allow: ALLOW,
      },
    );
  }
  return hostOriginRefusal(runtime, request.headers);
}

/**
 * Admits a request to the MCP endpoint as an exchange of its tenant, or throws the refusal (the exchange
 * is set then too, under the default tenant when the tenant is not known, so the refusal is logged and counted).
 */
export async function admit(
  ctx: EdgeContext,
  runtime: EdgeRuntime,
  request: FastifyRequest,
): Promise<Exchange> {
  const sessionId = headerValue(request.headers, 'mcp-session-id');
  const begin = (tenant: string) =>
    startExchange(
      runtime,
      tenant,
      sessionId,
      ctx.metrics !== undefined ? [ctx.metrics.observerFor(tenant)] : [],
    );
  const refuse = (answer: EdgeHttpError): never => {
    request.edge = begin(runtime.defaultTenant);
    request.edge.wireBytesBefore = request.raw.socket.bytesWritten;
    throw new EdgeError(answer);
  };
  const early = refusalBeforeTenant(runtime, request);
  if (early !== undefined) refuse(early);
  const decision = await runtime.tenants.resolve(request.headers, request.socket.remoteAddress);
  if (decision.untrustedHeader) ctx.metrics?.untrustedTenantHeader();
  if (!decision.ok) {
    refuse(
      edgeRefusal(401, 'unauthenticated', decision.message, null, {
        'www-authenticate': decision.wwwAuthenticate,
      }),
    );
  }
  const exchange = begin(decision.ok ? decision.tenant : runtime.defaultTenant);
  exchange.wireBytesBefore = request.raw.socket.bytesWritten;
  request.edge = exchange;
  return exchange;
}
