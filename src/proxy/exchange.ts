// One HTTP exchange through the edge: the policy it started under, its tenant, the requests it carries,
// and what was seen. In-flight exchanges keep the runtime they started with, even across a reload.
import { limitPolicyOf } from '../config/load.js';
import type { EdgeConfig } from '../config/schema.js';
import { maxRequestBodyCeiling, maxResponseCeiling, resolveLimits } from '../core/limits.js';
import type { Outcome } from '../core/outcome.js';
import type { JsonRpcId, LimitMode, LimitPolicy, MessageSubject } from '../core/types.js';
import type { HostJudgeContext } from '../hosts/host-judge.js';
import { DEFAULT_HOST_BUDGETS, HostTable, userAgentProduct } from '../hosts/host-table.js';
import { type BodyRouting, bodyRouting } from '../inspect/body-routing.js';
import type { JudgeContext } from '../inspect/message-verdict.js';
import { combineObservers, ExchangeSummary, type InspectionObserver } from '../inspect/observer.js';
import { PendingRequests } from '../inspect/pending-requests.js';
import type { SessionStore } from '../inspect/session-store.js';
import { type AuthFailure, TenantResolver } from '../tenancy/tenant-resolver.js';
import { TrustedProxies } from '../tenancy/trusted-peers.js';
import type { UpstreamExchange } from '../upstream/upstream.js';

/** Everything a reload may change, swapped whole: an exchange keeps the runtime it started with. */
export interface EdgeRuntime {
  policy: LimitPolicy;
  defaultTenant: string;
  tenants: TenantResolver;
  allowedHosts: readonly string[];
  allowedOrigins: readonly string[];
  maxPagesPerListing: number;
  /** `server.maxGetStreamsPerSession`: GET streams one session may hold open at once. */
  maxGetStreamsPerSession: number;
  /** `server.trustedProxies`: the peers whose forwarding headers are believed. */
  trustedProxies: TrustedProxies;
  /** Host profiles and hostBudgets (src/hosts). */
  hosts: HostTable;
  /** Largest ceilings per tenant, computed once per runtime (they bound what the edge holds). */
  holdCache: Map<string, { response: number | null; requestBody: number | null }>;
}

export function runtimeOf(config: EdgeConfig): EdgeRuntime {
  return {
    policy: limitPolicyOf(config),
    defaultTenant: config.tenancy.default,
    tenants: new TenantResolver(config.tenancy, Object.keys(config.tenants)),
    allowedHosts: config.server.allowedHosts,
    allowedOrigins: config.server.allowedOrigins,
    maxPagesPerListing: config.pagination.maxPagesPerListing,
    maxGetStreamsPerSession: config.server.maxGetStreamsPerSession,
    trustedProxies: new TrustedProxies(config.server.trustedProxies),
    hosts: new HostTable(config.hosts ?? {}, config.hostBudgets ?? DEFAULT_HOST_BUDGETS),
    holdCache: new Map(),
  };
}

export function holdBounds(
  runtime: EdgeRuntime,
  tenant: string,
): { response: number | null; requestBody: number | null } {
  let bounds = runtime.holdCache.get(tenant);
  if (bounds === undefined) {
    bounds = {
      response: maxResponseCeiling(runtime.policy, tenant),
      requestBody: maxRequestBodyCeiling(runtime.policy, tenant),
    };
    runtime.holdCache.set(tenant, bounds);
  }
  return bounds;
}

export interface Exchange {
  runtime: EdgeRuntime;
  tenant: string;
  mode: LimitMode;
  sessionId: string | undefined;
  /** Requests in this exchange's body, waiting for answers on its response. */
  pending: PendingRequests;
  /** Their ids in order (a JSON answer too large to read is answered for these). */
  waiting: JsonRpcId[];
  summary: ExchangeSummary;
  observer: InspectionObserver;
  startedAt: bigint;
  requestBytes: number;
  /** Bytes the client's connection had carried before this exchange (its own are counted from there). */
  wireBytesBefore: number;
  upstreamStatus: number | undefined;
  upstreamSentAt: bigint | undefined;
  /** Set where the edge decides how the exchange ends; unset, it is decided when the response closes. */
  outcome: Outcome | undefined;
  /** The first product of the client's User-Agent: the host when nothing else names it. */
  userAgentProduct: string | undefined;
  /** The host an initialize in this exchange named; the session keeps it once the upstream accepts it. */
  initializedHost: string | undefined;
  /** What the host-budget step needs, built once per exchange. */
  hostJudge: HostJudgeContext;
  /** What the request body routes by on a stdio child, read when the body was judged. */
  bodyRouting?: BodyRouting | undefined;
  /** The host its messages were judged under (its session's, else its User-Agent's), for the log line. */
  host?: string | undefined;
  /** Why admission refused it a 401 (src/tenancy), for the log line. */
  authFailure?: AuthFailure | undefined;
}

/** An exchange's own requests come from one body, itself bounded by request.maxBodyBytes. */
const EXCHANGE_PENDING = { maxEntries: 10_000, maxBytes: 64 * 1024 * 1024, ttlMs: 60 * 60 * 1000 };

export function startExchange(
  runtime: EdgeRuntime,
  tenant: string,
  sessionId: string | undefined,
  observers: InspectionObserver[],
  userAgent?: string,
): Exchange {
  const summary = new ExchangeSummary();
  const mode = resolveLimits(runtime.policy, { tenant }).mode.value;
  return {
    runtime,
    tenant,
    mode,
    sessionId,
    pending: new PendingRequests(EXCHANGE_PENDING),
    waiting: [],
    summary,
    observer: combineObservers(summary, ...observers),
    startedAt: process.hrtime.bigint(),
    requestBytes: 0,
    wireBytesBefore: 0,
    upstreamStatus: undefined,
    upstreamSentAt: undefined,
    outcome: undefined,
    userAgentProduct: userAgentProduct(userAgent),
    initializedHost: undefined,
    hostJudge: { hosts: runtime.hosts, tenant, observeOnly: mode === 'observe' },
  };
}

/**
 * The judge for messages of this exchange in one direction. Requests are remembered in the exchange only;
 * they reach the session when the upstream accepts the exchange (acceptedBySession), so a session id the
 * upstream never issued costs the edge nothing past the exchange.
 */
export function judgeContext(
  exchange: Exchange,
  direction: 'request' | 'response',
  sessions: SessionStore,
): JudgeContext {
  const session = exchange.sessionId !== undefined ? sessions.known(exchange.sessionId) : undefined;
  exchange.host ??= session?.host ?? exchange.runtime.hosts.hostOf(exchange.userAgentProduct);
  // Whole object literals of one shape: a spread of a shared base falls on V8's slow clone path.
  if (direction === 'request') {
    // Requests from the client are answered by the server: remember them for this exchange.
    return {
      direction,
      tenant: exchange.tenant,
      policy: exchange.runtime.policy,
      mode: exchange.mode,
      observer: exchange.observer,
      hosts: exchange.hostJudge,
      host: exchange.host,
      noteHost: (host: string) => {
        exchange.initializedHost = host;
      },
      answered: undefined,
      answeredInSession: session?.toClient,
      answeredBefore: undefined,
      remember: (id: JsonRpcId, subject: MessageSubject) => {
        exchange.pending.remember(id, subject);
        exchange.waiting.push(id);
      },
    };
  }
  return {
    direction,
    tenant: exchange.tenant,
    policy: exchange.runtime.policy,
    mode: exchange.mode,
    observer: exchange.observer,
    hosts: exchange.hostJudge,
    host: undefined,
    noteHost: undefined,
    answered: exchange.pending,
    answeredInSession: session?.toServer,
    answeredBefore: session?.answered,
    remember:
      session !== undefined
        ? (id: JsonRpcId, subject: MessageSubject) => {
            session.toClient.remember(id, subject);
            sessions.trim();
          }
        : undefined,
  };
}

/**
 * The upstream answered this exchange with a 2xx for its session: the session is real. Its requests still
 * waiting are handed to the session, so an answer that arrives on another stream is attributed too.
 */
export function acceptedBySession(exchange: Exchange, sessions: SessionStore): void {
  if (exchange.sessionId === undefined) return;
  const session = sessions.accept(exchange.sessionId);
  if (exchange.initializedHost !== undefined) session.host = exchange.initializedHost;
  for (const [id, subject] of exchange.pending.entries()) session.toServer.remember(id, subject);
  sessions.trim();
}

/** The response ceiling for the answer(s) this exchange waits for; the tenant's largest when unknown. */
export function responseHoldBytes(exchange: Exchange, subjects: MessageSubject[]): number | null {
  const largest = holdBounds(exchange.runtime, exchange.tenant).response;
  if (subjects.length === 0) return largest;
  let sum = 0;
  for (const subject of subjects) {
    const bytes = resolveLimits(exchange.runtime.policy, {
      tenant: exchange.tenant,
      method: subject.method,
      tool: subject.tool,
    }).response.maxMessageBytes.value;
    if (bytes === null) return null;
    sum += bytes;
  }
  return sum;
}

/** The method and tool of each request this exchange still waits on, in order. */
export function subjectsWaiting(exchange: Exchange): MessageSubject[] {
  const subjects: MessageSubject[] = [];
  for (const id of exchange.waiting) {
    const subject = exchange.pending.peek(id);
    if (subject !== undefined) subjects.push(subject);
  }
  return subjects;
}

/**
 * The exchange as an upstream sees it (src/upstream/upstream.ts): its tenant, session and request ids, the
 * hold bound, and how its request crosses to the upstream: whether the peer's forwarding headers are believed,
 * and which identity headers stop at the edge or carry the resolved tenant (TenantResolver.upstreamIdentity).
 */
export function upstreamView(exchange: Exchange): UpstreamExchange {
  const runtime = exchange.runtime;
  return {
    tenant: exchange.tenant,
    sessionId: exchange.sessionId,
    enforced: exchange.mode === 'enforce',
    requestIds: exchange.waiting,
    initializes: exchange.waiting.some((id) => exchange.pending.peek(id)?.method === 'initialize'),
    routing: exchange.bodyRouting ?? bodyRouting([]),
    responseHoldBytes: holdBounds(runtime, exchange.tenant).response,
    crossing: (clientHeaders, peer) => ({
      trustedPeer: runtime.trustedProxies.trusts(peer),
      ...runtime.tenants.upstreamIdentity(clientHeaders, peer, exchange.tenant),
    }),
    sent: () => {
      exchange.upstreamSentAt ??= process.hrtime.bigint();
    },
  };
}
