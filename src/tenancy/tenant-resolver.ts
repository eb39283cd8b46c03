// Which tenant an exchange belongs to, decided once per exchange by the resolvers of `tenancy.resolve`
// in order. A tenant value always comes from configuration; a credential that is presented and fails
// is refused (401), never treated as anonymous. The headers a resolver consumes as the edge's own (API keys,
// a tenant header it may not believe) stop at the edge: see TenantResolver.upstreamIdentity.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
  jwtVerify,
} from 'jose';
import type { ApiKeyResolverConfig, EdgeConfig, JwtResolverConfig } from '../config/schema.js';
import { TrustedProxies } from './trusted-peers.js';

/** Why a request was refused with a 401, as the log says it: never the credential itself. */
export type AuthFailure =
  | 'no_credential'
  | 'unknown_key'
  | 'not_a_jwt'
  | 'malformed_token'
  | 'bad_signature'
  | 'unknown_signing_key'
  | 'algorithm_not_allowed'
  | 'expired'
  | 'not_yet_valid'
  | 'wrong_audience'
  | 'wrong_issuer'
  | 'missing_claim'
  | 'unknown_tenant'
  | 'invalid_token';

export type TenantDecision =
  | { ok: true; tenant: string; untrustedHeader: boolean }
  | {
      ok: false;
      status: 401;
      message: string;
      wwwAuthenticate: string;
      untrustedHeader: boolean;
      reason: AuthFailure;
    };

type Headers = Record<string, string | string[] | undefined>;

/** What one resolver made of a request: a tenant, nothing to go on, or a credential that failed. */
type ResolverFinding =
  | { kind: 'identified'; tenant: string }
  | { kind: 'absent'; untrustedHeader?: boolean }
  | { kind: 'rejected'; message: string; wwwAuthenticate: string; reason: AuthFailure };

/** What the upstream gets of the headers the resolvers read: some stop at the edge, some the edge sets. */
export interface UpstreamIdentity {
  drop: string[];
  set: Record<string, string>;
}

interface Resolver {
  resolve(headers: Headers, peer: string | undefined): Promise<ResolverFinding> | ResolverFinding;
  /** Adds to `identity` the headers of this request that were meant for the edge (they stop there). */
  crossing(headers: Headers, peer: string | undefined, tenant: string, identity: UpstreamIdentity): void;
}

const ABSENT: ResolverFinding = { kind: 'absent' };

/** The first value of a header (node:http gives repeated headers as an array). */
function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function bearerToken(headers: Headers, header = 'authorization'): string | undefined {
  const value = first(headers[header]);
  const match = value === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(value);
  return match?.[1];
}

function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}

function headerResolver(header: string, trusted: TrustedProxies, known: ReadonlySet<string>): Resolver {
  return {
    resolve(headers, peer) {
      const name = first(headers[header]);
      if (name === undefined || name === '') return ABSENT;
      // From any other peer the header is the client choosing its own tenant: ignored, and counted.
      if (!trusted.trusts(peer)) return { kind: 'absent', untrustedHeader: true };
      return known.has(name) ? { kind: 'identified', tenant: name } : ABSENT;
    },
    crossing(headers, peer, tenant, identity) {
      if (headers[header] === undefined) return;
      // From a trusted proxy the upstream is told the tenant the edge resolved; from anyone else, nothing.
      if (trusted.trusts(peer)) identity.set[header] = tenant;
      else identity.drop.push(header);
    },
  };
}

export function sha256Hex(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

function apiKeyResolver(config: ApiKeyResolverConfig['apiKey'], jwtFollows: boolean): Resolver {
  const entries: { tenant: string; hash: Buffer }[] = [];
  for (const [tenant, hashes] of Object.entries(config.tenants)) {
    for (const hash of hashes) entries.push({ tenant, hash: Buffer.from(hash, 'hex') });
  }
  const presentedKey = (headers: Headers): string | undefined => {
    const key = config.bearer ? bearerToken(headers, config.header) : first(headers[config.header]);
    return key === '' ? undefined : key;
  };
  const tenantOfKey = (key: string): string | undefined => {
    const presented = createHash('sha256').update(key, 'utf8').digest();
    let match: string | undefined;
    // Compare with every entry, in constant time each, so timing tells nothing about which came close.
    for (const entry of entries) {
      if (timingSafeEqual(presented, entry.hash) && match === undefined) match = entry.tenant;
    }
    return match;
  };
  return {
    crossing(headers, _peer, _tenant, identity) {
      if (headers[config.header] === undefined) return;
      // A header of its own is the edge's whatever it holds. Authorization is the edge's when it holds an edge
      // key; anything else in it (a JWT for the jwt resolver, a token when an earlier resolver decided) is not.
      if (config.header !== 'authorization') identity.drop.push(config.header);
      else {
        const key = presentedKey(headers);
        if (key !== undefined && tenantOfKey(key) !== undefined) identity.drop.push(config.header);
      }
    },
    resolve(headers) {
      const key = presentedKey(headers);
      if (key === undefined) return ABSENT;
      // A bearer JWT is for the jwt resolver that follows, not a wrong key.
      if (config.bearer && jwtFollows && looksLikeJwt(key)) return ABSENT;
      const match = tenantOfKey(key);
      if (match !== undefined) return { kind: 'identified', tenant: match };
      return {
        kind: 'rejected',
        message: `The API key in ${config.header} is not valid for this mcp-edge`,
        wwwAuthenticate: config.bearer ? 'Bearer error="invalid_token"' : 'ApiKey',
        reason: 'unknown_key',
      };
    },
  };
}

/** What jose's verification error means for the operator (its codes and the claim it names). */
export function jwtFailure(err: unknown): AuthFailure {
  const { code, claim, reason } = err as { code?: unknown; claim?: unknown; reason?: unknown };
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return 'expired';
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return 'bad_signature';
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return 'unknown_signing_key';
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return 'algorithm_not_allowed';
    case 'ERR_JWS_INVALID':
    case 'ERR_JWT_INVALID':
      return 'malformed_token';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (claim === 'aud') return 'wrong_audience';
      if (claim === 'iss') return 'wrong_issuer';
      if (claim === 'nbf') return 'not_yet_valid';
      return reason === 'missing' ? 'missing_claim' : 'invalid_token';
    default:
      return 'invalid_token';
  }
}

function jwtKeySource(config: JwtResolverConfig['jwt']): Uint8Array | JWTVerifyGetKey {
  if (config.secret !== undefined) return new TextEncoder().encode(config.secret);
  const location = config.jwks ?? '';
  if (/^https?:/i.test(location)) {
    // jose caches the set and refetches on an unknown key id (with a cooldown).
    return createRemoteJWKSet(new URL(location), {
      cacheMaxAge: 10 * 60 * 1000,
      cooldownDuration: 30 * 1000,
    });
  }
  return createLocalJWKSet(
    JSON.parse(readFileSync(location, 'utf8')) as Parameters<typeof createLocalJWKSet>[0],
  );
}

function jwtResolver(config: JwtResolverConfig['jwt'], known: ReadonlySet<string>): Resolver {
  const key = jwtKeySource(config);
  const options: JWTVerifyOptions = {
    algorithms: [...config.algorithms],
    requiredClaims: ['exp'],
    ...(config.issuer !== undefined ? { issuer: config.issuer } : {}),
    ...(config.audience !== undefined ? { audience: config.audience } : {}),
  };
  const refuse = (message: string, reason: AuthFailure): ResolverFinding => ({
    kind: 'rejected',
    message,
    reason,
    wwwAuthenticate: `Bearer error="invalid_token", error_description="${message.replace(/"/g, "'")}"`,
  });
  return {
    crossing(headers, _peer, _tenant, identity) {
      // forward: false: a bearer JWT is the edge's alone. Otherwise it is the MCP authorization token of the
      // upstream, which the edge only reads (verifies, and takes the tenant from).
      const token = bearerToken(headers);
      if (!config.forward && token !== undefined && looksLikeJwt(token)) identity.drop.push('authorization');
    },
    async resolve(headers) {
      const token = bearerToken(headers);
      if (token === undefined) return ABSENT;
      if (!looksLikeJwt(token)) {
        // An opaque token is not this resolver's to verify: it passes (ignore), or is refused (reject).
        return config.opaqueTokens === 'reject'
          ? refuse(
              'The bearer token is not a JWT, and this mcp-edge accepts JWTs only (jwt.opaqueTokens: reject)',
              'not_a_jwt',
            )
          : ABSENT;
      }
      let payload: Record<string, unknown>;
      try {
        const verified =
          key instanceof Uint8Array
            ? await jwtVerify(token, key, options)
            : await jwtVerify(token, key, options);
        payload = verified.payload;
      } catch (err) {
        const code = (err as { code?: string }).code ?? 'ERR_JWT_INVALID';
        return refuse(`The bearer token failed verification (${code})`, jwtFailure(err));
      }
      const claim = payload[config.claim];
      if (typeof claim !== 'string' || !known.has(claim)) {
        return refuse(
          `The bearer token's "${config.claim}" claim does not name a tenant of this mcp-edge`,
          'unknown_tenant',
        );
      }
      return { kind: 'identified', tenant: claim };
    },
  };
}

/** Built once per config; resolves each exchange's tenant. */
export class TenantResolver {
  readonly #resolvers: Resolver[];

  constructor(
    private readonly tenancy: EdgeConfig['tenancy'],
    tenants: Iterable<string>,
  ) {
    const known = new Set(tenants);
    const items = tenancy.resolve;
    this.#resolvers = items.map((item, index) => {
      if ('header' in item)
        return headerResolver(item.header, new TrustedProxies(item.trustedProxies), known);
      if ('apiKey' in item) {
        const jwtFollows = items.slice(index + 1).some((later) => 'jwt' in later);
        return apiKeyResolver(item.apiKey, jwtFollows);
      }
      return jwtResolver(item.jwt, known);
    });
  }

  /**
   * The identity headers of a request as the upstream gets them, once `tenant` is resolved: the edge's own
   * credentials and tenant headers from untrusted peers are dropped; a tenant header from a trusted proxy
   * carries the resolved tenant. Every resolver is asked, not only the one that decided.
   */
  upstreamIdentity(headers: Headers, peer: string | undefined, tenant: string): UpstreamIdentity {
    const identity: UpstreamIdentity = { drop: [], set: {} };
    for (const resolver of this.#resolvers) resolver.crossing(headers, peer, tenant, identity);
    identity.drop = [...new Set(identity.drop)];
    return identity;
  }

  /** The tenant of a request; synchronous unless a resolver has to wait (a JWT's keys). */
  resolve(headers: Headers, peer: string | undefined): TenantDecision | Promise<TenantDecision> {
    return this.#resolveFrom(0, false, headers, peer);
  }

  #resolveFrom(
    start: number,
    untrusted: boolean,
    headers: Headers,
    peer: string | undefined,
  ): TenantDecision | Promise<TenantDecision> {
    let untrustedHeader = untrusted;
    for (let i = start; i < this.#resolvers.length; i++) {
      const finding = this.#resolvers[i]!.resolve(headers, peer);
      if (finding instanceof Promise) {
        const seen = untrustedHeader;
        return finding.then((settled) => {
          const decision = this.#decide(settled, seen);
          if (decision !== undefined) return decision;
          const flagged = settled.kind === 'absent' && settled.untrustedHeader === true;
          return this.#resolveFrom(i + 1, seen || flagged, headers, peer);
        });
      }
      const decision = this.#decide(finding, untrustedHeader);
      if (decision !== undefined) return decision;
      if (finding.kind === 'absent' && finding.untrustedHeader === true) untrustedHeader = true;
    }
    if (this.tenancy.requireIdentified) {
      return {
        ok: false,
        status: 401,
        message:
          'This mcp-edge serves identified tenants only, and the request carries no credential it accepts',
        wwwAuthenticate: 'Bearer',
        untrustedHeader,
        reason: 'no_credential',
      };
    }
    return { ok: true, tenant: this.tenancy.default, untrustedHeader };
  }

  /** What one resolver's finding decides, or undefined when the next resolver is asked. */
  #decide(finding: ResolverFinding, untrustedHeader: boolean): TenantDecision | undefined {
    if (finding.kind === 'identified') return { ok: true, tenant: finding.tenant, untrustedHeader };
    if (finding.kind === 'rejected') {
      return {
        ok: false,
        status: 401,
        message: finding.message,
        wwwAuthenticate: finding.wwwAuthenticate,
        untrustedHeader,
        reason: finding.reason,
      };
    }
    return undefined;
  }
}
