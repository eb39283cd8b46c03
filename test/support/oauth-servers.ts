// OAuth-protected MCP servers built from the SDK's own auth pieces (its auth router, metadata router, bearer
// middleware and demo in-memory provider), each on its own Express app on 127.0.0.1, and the OAuth client
// provider an SDK client runs the authorization-code flow with (the redirect is driven by the test).
import { generateKeyPairSync, type KeyObject, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { DemoInMemoryAuthProvider } from '@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import type { OAuthTokenVerifier } from '@modelcontextprotocol/sdk/server/auth/provider.js';
import {
  createOAuthMetadata,
  getOAuthProtectedResourceMetadataUrl,
  mcpAuthMetadataRouter,
  mcpAuthRouter,
} from '@modelcontextprotocol/sdk/server/auth/router.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import express, { type RequestHandler, type Router } from 'express';
import { exportJWK, jwtVerify, SignJWT } from 'jose';
import { closeHttpServer } from '../../src/demo/server.js';
import { type RecordedRequest, recordRequest } from './recorded-request.js';

const SCOPES = ['mcp:tools'];
/** The auth handlers rate-limit by default; tests make more requests from one address than a user would. */
const NO_RATE_LIMIT = {
  authorizationOptions: { rateLimit: false as const },
  tokenOptions: { rateLimit: false as const },
  clientRegistrationOptions: { rateLimit: false as const },
};

async function listen(
  handler: Parameters<typeof createServer>[1],
): Promise<{ server: Server; origin: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return { server, origin: `http://127.0.0.1:${port}` };
}

/** An MCP server (stateless, one tool) whose endpoint only a valid bearer token passes. */
function mcpEndpoint(): RequestHandler {
  return async (req, res) => {
    if (req.method !== 'POST') {
      res
        .status(405)
        .json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Method not allowed.' } });
      return;
    }
    const server = new McpServer({ name: 'oauth-protected', version: '1.0.0' });
    server.registerTool(
      'whoami',
      { description: 'Names the OAuth client and resource of the verified token this call carried.' },
      async (extra) => ({
        content: [
          {
            type: 'text',
            text: JSON.stringify({
              clientId: extra.authInfo?.clientId,
              resource: extra.authInfo?.resource?.href,
              scopes: extra.authInfo?.scopes,
            }),
          },
        ],
      }),
    );
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  };
}

export interface OAuthMcpServer {
  /** `http://127.0.0.1:PORT/mcp`, the server's own address. */
  url: string;
  origin: string;
  /** Every request the server received (auth routes and MCP endpoint), in arrival order. */
  requests: RecordedRequest[];
  /**
   * Installs the auth routes once the edge's public URL is known. `publicResource`: the URL tokens must be
   * issued for (the edge's MCP URL). `issuer`: the MCP server is its own authorization server with this
   * public issuer URL; otherwise `authorizationServer` is a separate one.
   */
  protect(
    options:
      | { publicResource: URL; issuer: URL }
      | { publicResource: URL; authorizationServer: AuthorizationServer },
  ): void;
  close(): Promise<void>;
}

/** An OAuth-protected MCP server: until protect() is called it answers 503. */
export async function startOAuthMcpServer(): Promise<OAuthMcpServer> {
  const requests: RecordedRequest[] = [];
  let routes: Router | undefined;
  const app = express();
  app.use((req, res, next) => {
    requests.push(recordRequest(req));
    if (routes === undefined) res.status(503).json({ error: 'not protected yet' });
    else routes(req, res, next);
  });
  const { server, origin } = await listen(app);
  const url = `${origin}/mcp`;
  return {
    url,
    origin,
    requests,
    protect(options) {
      const router = express.Router();
      let verifier: OAuthTokenVerifier;
      if ('issuer' in options) {
        // Tokens only for the public resource (the demo provider's strict resource check).
        const provider = new DemoInMemoryAuthProvider(
          (resource) => resource?.href === options.publicResource.href,
        );
        verifier = provider;
        // The resource it names is its own address, as a server that does not know about the edge would.
        router.use(
          mcpAuthRouter({
            provider,
            issuerUrl: options.issuer,
            resourceServerUrl: new URL(url),
            scopesSupported: SCOPES,
            ...NO_RATE_LIMIT,
          }),
        );
      } else {
        verifier = options.authorizationServer.verifier;
        router.use(
          mcpAuthMetadataRouter({
            oauthMetadata: options.authorizationServer.metadata,
            resourceServerUrl: new URL(url),
            scopesSupported: SCOPES,
          }),
        );
      }
      const bearer = requireBearerAuth({
        verifier,
        resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(new URL(url)),
        expectedResource: options.publicResource,
      });
      router.all('/mcp', bearer, mcpEndpoint());
      routes = router;
    },
    close: () => closeHttpServer(server),
  };
}

export interface AuthorizationServer {
  issuer: URL;
  metadata: OAuthMetadata;
  /** Verifies the JWT access tokens it issues (what a resource server does with the JWKS). */
  verifier: OAuthTokenVerifier;
  jwksUrl: string;
  close(): Promise<void>;
}

/**
 * A separate authorization server (the SDK's auth router and demo provider) that issues JWT access tokens
 * (ES256, its keys at /jwks) carrying `tenant` and, as audience, the resource the client asked for.
 */
export async function startJwtAuthorizationServer(tenant: string): Promise<AuthorizationServer> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const kid = randomUUID();
  let issuer = '';
  const provider = new JwtIssuingProvider(privateKey, publicKey, kid, tenant, () => issuer);
  let routes: Router | undefined;
  const app = express();
  app.use((req, res, next) => (routes === undefined ? res.status(503).end() : routes(req, res, next)));
  const { server, origin } = await listen(app);
  issuer = `${origin}/`;
  const issuerUrl = new URL(origin);
  const router = express.Router();
  router.use(mcpAuthRouter({ provider, issuerUrl, scopesSupported: SCOPES, ...NO_RATE_LIMIT }));
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' };
  router.get('/jwks', (_req, res) => {
    res.json({ keys: [jwk] });
  });
  routes = router;
  return {
    issuer: issuerUrl,
    metadata: createOAuthMetadata({ provider, issuerUrl, scopesSupported: SCOPES }),
    verifier: provider,
    jwksUrl: `${origin}/jwks`,
    close: () => closeHttpServer(server),
  };
}

class JwtIssuingProvider extends DemoInMemoryAuthProvider {
  constructor(
    private readonly privateKey: KeyObject,
    private readonly publicKey: KeyObject,
    private readonly kid: string,
    private readonly tenant: string,
    private readonly issuer: () => string,
  ) {
    super();
  }

  override async exchangeAuthorizationCode(
    client: Parameters<DemoInMemoryAuthProvider['exchangeAuthorizationCode']>[0],
    authorizationCode: string,
    codeVerifier?: string,
  ): Promise<OAuthTokens> {
    // The demo provider checks the code and records the grant; its opaque token tells what the grant was.
    const granted = await super.exchangeAuthorizationCode(client, authorizationCode, codeVerifier);
    const info = await super.verifyAccessToken(granted.access_token);
    const jwt = await new SignJWT({
      client_id: info.clientId,
      scope: info.scopes.join(' '),
      tenant: this.tenant,
    })
      .setProtectedHeader({ alg: 'ES256', kid: this.kid })
      .setIssuer(this.issuer())
      .setAudience(info.resource?.href ?? '')
      .setSubject('demo_user')
      .setIssuedAt()
      .setExpirationTime(info.expiresAt ?? Math.floor(Date.now() / 1000) + 3600)
      .sign(this.privateKey);
    return { ...granted, access_token: jwt };
  }

  override async verifyAccessToken(token: string): Promise<AuthInfo> {
    const { payload } = await jwtVerify(token, this.publicKey, {
      issuer: this.issuer(),
      algorithms: ['ES256'],
    });
    const audience = Array.isArray(payload.aud) ? payload.aud[0] : payload.aud;
    return {
      token,
      clientId: String(payload.client_id),
      scopes: typeof payload.scope === 'string' && payload.scope !== '' ? payload.scope.split(' ') : [],
      ...(payload.exp !== undefined ? { expiresAt: payload.exp } : {}),
      ...(audience !== undefined ? { resource: new URL(audience) } : {}),
    };
  }
}

/** The SDK client's side of the flow: dynamic registration, PKCE, tokens, all kept in memory. */
export class TestOAuthClient implements OAuthClientProvider {
  /** Never contacted: the test reads the authorization server's redirect to it and takes the code. */
  readonly redirectUrl = 'http://127.0.0.1:9/callback';
  readonly clientMetadata: OAuthClientMetadata = {
    client_name: 'mcp-edge OAuth test',
    redirect_uris: [this.redirectUrl],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
  registered: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  authorizationUrl: URL | undefined;
  #verifier = '';

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.registered;
  }
  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.registered = info;
  }
  tokens(): OAuthTokens | undefined {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL): void {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }
  codeVerifier(): string {
    return this.#verifier;
  }
}

/**
 * A fetch that reaches only the given origins, as a client outside the edge's network would: a request to any
 * other (the upstream's own address) is recorded and fails. Not a TypeError, which the SDK takes for CORS.
 */
export function originBoundFetch(allowed: readonly string[]): {
  fetch: FetchLike;
  fetched: string[];
  refused: string[];
} {
  const fetched: string[] = [];
  const refused: string[] = [];
  const bound: FetchLike = async (url, init) => {
    const target = new URL(url);
    if (!allowed.includes(target.origin)) {
      refused.push(target.href);
      throw new Error(`unreachable from the client: ${target.href}`);
    }
    fetched.push(`${init?.method ?? 'GET'} ${target.origin}${target.pathname}`);
    return fetch(url, init);
  };
  return { fetch: bound, fetched, refused };
}
