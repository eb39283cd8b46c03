// One HTTP exchange through the edge: the policy it started under, its tenant, the requests it carries,
// and what was seen. In-flight exchanges keep the runtime they started with, even across a reload. The record
// sits below the shell (src/proxy) and the filters (src/proxy/filters): both import it, it imports neither.
import { limitPolicyOf } from '../config/load.js';
import type { EdgeConfig } from '../config/schema.js';
import { maxRequestBodyCeiling, maxResponseCeiling, resolveLimits } from '../core/limits.js';
import type { ScannedMessage } from '../core/message-scan.js';
import type { Outcome } from '../core/outcome.js';
import type { EdgeHttpError } from '../core/refusals/answers.js';
import type { JsonRpcId, LimitMode, LimitPolicy, MessageSubject } from '../core/types.js';
import type { HostJudgeContext } from '../hosts/host-judge.js';
import { DEFAULT_HOST_BUDGETS, HostTable, userAgentProduct } from '../hosts/host-table.js';
import { type BodyRouting, bodyRouting } from '../inspect/body-routing.js';
import type { AnswerCheck, JudgeContext, JudgedMessage, MessageCheck } from '../inspect/message-verdict.js';
import { combineObservers, ExchangeSummary, type InspectionObserver } from '../inspect/observer.js';
import { PendingRequests } from '../inspect/pending-requests.js';
import type { RequestMessage } from '../inspect/request-body.js';
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

/**
 * What the filter chain gives each exchange (FilterChain in src/proxy/filters/filter-chain.ts, which imports
 * this file): the observers of its messages, the checks they go through, and the hook told what became of each.
 */
export interface ExchangeFilters {
  observers(tenant: string, exchange: Exchange): InspectionObserver[];
  readonly checks: readonly MessageCheck[];
  readonly answerChecks: readonly AnswerCheck[];
  readonly responseMessage: ((exchange: Exchange, message: JudgedMessage) => void) | undefined;
}

export interface Exchange {
  runtime: EdgeRuntime;
  /** The filters it started with. */
  filters: ExchangeFilters;
  tenant: string;
  mode: LimitMode;
  sessionId: string | undefined;
  /**
   * The one record of which of this exchange's requests still wait for an answer, oldest first: remembered
   * when its body is judged, taken when an answer is judged (the session keeps its own copy once the upstream
   * accepts it, for answers on other streams).
   */
  pending: PendingRequests;
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
  /** The client's MCP-Protocol-Version header: the revision an answer of the edge's own is worded for. */
  protocolVersion: string | undefined;
  /** The host an initialize in this exchange named; the session keeps it once the upstream accepts it. */
  initializedHost: string | undefined;
  /** What the host-budget step needs, built once per exchange. */
  hostJudge: HostJudgeContext;
  /** What the request body routes by on a stdio child, read when the body was judged. */
  bodyRouting?: BodyRouting | undefined;
  /** Its body's messages, once judged (none for a GET or DELETE): what the filters' request hooks see. */
  request?: JudgedRequest | undefined;
  /**
   * The body that goes upstream when the filters refused some of its messages: the others' bytes, as the
   * client wrote each, in a batch (refused-messages.ts). Unset, the client's body goes as it came.
   */
  forwardedBody?: Buffer | undefined;
  /**
   * The edge's own answers to the messages of a batch the filters refused while the others went upstream: the
   * relays give them to the client with the upstream's answer, each for its own id.
   */
  localAnswers?: readonly EdgeHttpError[] | undefined;
  /** Headers the filters set on the request as it goes upstream (a traceparent). */
  upstreamHeaders?: Record<string, string> | undefined;
  /** Entries the filters put in each message's params._meta toward a stdio child (a traceparent). */
  upstreamMeta?: Record<string, string> | undefined;
  /** The exchange as the upstream sees it, built once, when the upstream first asks (upstreamView). */
  upstream?: UpstreamExchange | undefined;
  /** The host its messages were judged under (its session's, else its User-Agent's), for the log line. */
  host?: string | undefined;
  /** Why admission refused it a 401 (src/tenancy), for the log line. */
  authFailure?: AuthFailure | undefined;
  /** Fields a filter adds to the exchange log line (a trace id), set before the exchange ends. */
  logFields?: Record<string, unknown> | undefined;
  /** The filters' own state for this exchange, one entry per ExchangeSlot (src/proxy/filters/exchange-slot.ts). */
  filterState?: unknown[] | undefined;
  /** Set by the relay of its answer once that has begun: how shutdown ends it. */
  shutdownEnding?: ShutdownEnding | undefined;
}

/** A request body as judged: its messages as the filters see them, and as they were read. */
export interface JudgedRequest {
  messages: readonly RequestMessage[];
  /** The body was a JSON array (a batch). */
  batch: boolean;
  /** Each message as read, in the same order: its bytes and what routes it (what goes upstream of a batch refused in part). */
  read: readonly ScannedMessage[];
}

/**
 * How a relay whose answer has begun ends it when shutdown reaches its exchange (shutdown.ts): the requests
 * still waiting get the shutdown error, the client's response closes. Unset, shutdown answers the exchange.
 */
export interface ShutdownEnding {
  /** An SSE stream (the shutdown report counts them). */
  readonly stream: boolean;
  end(): void;
}

/** An exchange's own requests come from one body, itself bounded by request.maxBodyBytes. */
const EXCHANGE_PENDING = { maxEntries: 10_000, maxBytes: 64 * 1024 * 1024, ttlMs: 60 * 60 * 1000 };

export function startExchange(
  runtime: EdgeRuntime,
  tenant: string,
  sessionId: string | undefined,
  filters: ExchangeFilters,
  userAgent?: string,
  protocolVersion?: string,
): Exchange {
  const summary = new ExchangeSummary();
  const mode = resolveLimits(runtime.policy, { tenant }).mode.value;
  const exchange: Exchange = {
    runtime,
    filters,
    tenant,
    mode,
    sessionId,
    pending: new PendingRequests(EXCHANGE_PENDING),
    summary,
    // The filters' observers are added below, once the exchange they may watch exists.
    observer: summary,
    startedAt: process.hrtime.bigint(),
    requestBytes: 0,
    wireBytesBefore: 0,
    upstreamStatus: undefined,
    upstreamSentAt: undefined,
    outcome: undefined,
    userAgentProduct: userAgentProduct(userAgent),
    protocolVersion,
    initializedHost: undefined,
    hostJudge: { hosts: runtime.hosts, tenant, observeOnly: mode === 'observe' },
    // Set by later stages; present from the start, so every exchange keeps one shape.
    bodyRouting: undefined,
    request: undefined,
    forwardedBody: undefined,
    localAnswers: undefined,
    upstreamHeaders: undefined,
    upstreamMeta: undefined,
    upstream: undefined,
    host: undefined,
    authFailure: undefined,
    logFields: undefined,
    filterState: undefined,
    shutdownEnding: undefined,
  };
  exchange.observer = combineObservers(summary, ...filters.observers(tenant, exchange));
  return exchange;
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
      remember: (id: JsonRpcId, subject: MessageSubject) => exchange.pending.remember(id, subject),
      checks: exchange.filters.checks,
      judged: undefined,
      protocolVersion: exchange.protocolVersion,
    };
  }
  const hook = exchange.filters.responseMessage;
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
    checks: exchange.filters.checks,
    answerChecks: exchange.filters.answerChecks,
    judged: hook !== undefined ? (message: JudgedMessage) => hook(exchange, message) : undefined,
    protocolVersion: exchange.protocolVersion,
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
  return exchange.pending.entries().map(([, subject]) => subject);
}

/** The id an answer of the edge's own names: the one request still waiting, or null (none, or several). */
export function onlyRequestWaiting(exchange: Exchange | undefined): JsonRpcId {
  if (exchange === undefined || exchange.pending.size !== 1) return null;
  return exchange.pending.ids()[0] ?? null;
}

/**
 * The exchange as an upstream sees it (src/upstream/upstream.ts), built once, when the upstream first asks
 * (its body has been judged by then): its tenant, session and request ids, the hold bound, and how its request
 * crosses to the upstream: whether the peer's forwarding headers are believed, which identity headers stop at
 * the edge or carry the resolved tenant (TenantResolver.upstreamIdentity), and the headers the filters set.
 */
export function upstreamView(exchange: Exchange): UpstreamExchange {
  if (exchange.upstream !== undefined) return exchange.upstream;
  const runtime = exchange.runtime;
  const requests = exchange.pending.entries();
  exchange.upstream = {
    tenant: exchange.tenant,
    sessionId: exchange.sessionId,
    enforced: exchange.mode === 'enforce',
    requestIds: requests.map(([id]) => id),
    initializes: requests.some(([, subject]) => subject.method === 'initialize'),
    routing: exchange.bodyRouting ?? bodyRouting([]),
    meta: exchange.upstreamMeta,
    responseHoldBytes: holdBounds(runtime, exchange.tenant).response,
    crossing: (clientHeaders, peer) => {
      const identity = runtime.tenants.upstreamIdentity(clientHeaders, peer, exchange.tenant);
      const added = exchange.upstreamHeaders;
      return {
        trustedPeer: runtime.trustedProxies.trusts(peer),
        drop: identity.drop,
        // The edge's own identity headers win over a filter's.
        set: added !== undefined ? { ...added, ...identity.set } : identity.set,
      };
    },
    sent: () => {
      exchange.upstreamSentAt ??= process.hrtime.bigint();
    },
  };
  return exchange.upstream;
}
