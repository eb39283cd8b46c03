// The `upstream:` section: the MCP server behind the edge, either an HTTP endpoint (url, timeouts, TLS,
// connections, OAuth pass-through) or a stdio server it spawns (stdio), exactly one of them.
import { z } from 'zod';
import { basicCredentialProblem } from '../core/url-credentials.js';
import { durationSchema, sizeAtLeast } from './value-schemas.js';

/** A path passed through to the upstream unchanged (with everything below it): an OAuth endpoint such as /token. */
const oauthPathSchema = z
  .string()
  .regex(/^(\/[A-Za-z0-9._~-]+)+$/, {
    error:
      'must be a path of one or more "/segment" (letters, digits, "." "_" "~" "-"), without a trailing "/"',
  })
  .refine((path) => !path.split('/').some((segment) => segment === '.' || segment === '..'), {
    error: 'must not contain "." or ".." segments',
  });

/** Userinfo in the URL (`http://user:password@host/mcp`) is sent upstream as Basic authentication. */
const upstreamUrlSchema = z
  .string({ error: 'expected the upstream MCP endpoint URL' })
  .refine(
    (input) => {
      if (!URL.canParse(input)) return false;
      const protocol = new URL(input).protocol;
      return protocol === 'http:' || protocol === 'https:';
    },
    { error: 'expected an absolute http:// or https:// URL' },
  )
  .superRefine((input, ctx) => {
    const problem = basicCredentialProblem(input);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });

/**
 * A stdio MCP server the edge spawns itself (src/upstream/stdio-upstream.ts): an argv, never run through a
 * shell; the child's environment is only what is listed here, plus PATH and HOME.
 */
const stdioSchema = z.strictObject({
  command: z
    .array(z.string().min(1, { error: 'must not be empty' }), {
      error: 'expected the command as an argv list, e.g. [npx, -y, "@modelcontextprotocol/server-memory"]',
    })
    .min(1),
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string()).default({}),
  cwd: z.string().min(1, { error: 'must not be empty' }).optional(),
  // A session's child with no request for this long is ended (its client re-initializes).
  idleTimeout: durationSchema.default(15 * 60_000),
  // A session that has sent no request since its initialize is ended this long after it; 0: only idleTimeout.
  idleTimeoutBeforeFirstRequest: durationSchema.default(60_000),
  // A session whose client has no stream open and no request in flight is ended this long after (a client
  // that left without a DELETE: the SDK v1 client's close() sends none); 0: only idleTimeout.
  idleTimeoutWithoutStream: durationSchema.default(60_000),
  // Children alive at once (sessions and the sessionless pools); at it a new one takes the place of the idle
  // child quiet the longest (nothing open, nothing in flight), and gets a 503 when none is idle.
  maxProcesses: z.number().int().min(1).default(64),
  // Children one tenant may have alive at once (at it, as at maxProcesses, with the tenant's own idle
  // children). Default: half of maxProcesses, rounded up; all of them
  // when tenancy.resolve is empty (every request is then one tenant's): processesPerTenant in stdio-upstream.ts.
  maxProcessesPerTenant: z.number().int().min(1).optional(),
  // After SIGTERM, how long a child has to exit before SIGKILL.
  killGrace: durationSchema.default(5_000),
  // false: every call is answered as an SSE stream, as the MCP SDK's Streamable HTTP server answers.
  // true: a POST of one request whose answer comes first gets it as an application/json body (fewer bytes).
  jsonResponse: z.boolean().default(false),
  // How long a call waits for a request id (or progress token) that another call has in flight on the same
  // child (ids are never rewritten); past it, a 409 that says so. 0: refused at once.
  idWait: durationSchema.default(5_000),
  // What a session's child sends before the client opened its GET stream waits this long for it (0: not at
  // all), and at most this many bytes per session; past either, it is dropped and counted (a request answered).
  streamWait: durationSchema.default(5_000),
  streamWaitBytes: sizeAtLeast(0).default(256 * 1024),
});

/** Exactly one of upstream.url and upstream.stdio. */
function checkUpstreamKind(upstream: { url?: unknown; stdio?: unknown }, ctx: z.RefinementCtx): void {
  if (upstream.url === undefined && upstream.stdio === undefined) {
    ctx.addIssue({ code: 'custom', path: ['url'], message: 'is required' });
  } else if (upstream.url !== undefined && upstream.stdio !== undefined) {
    ctx.addIssue({
      code: 'custom',
      path: ['stdio'],
      message: 'upstream.url and upstream.stdio exclude each other: give exactly one of them',
    });
  }
}

export const upstreamSchema = z
  .strictObject({
    url: upstreamUrlSchema.optional(),
    // Instead of url: spawn a stdio MCP server, one child per session.
    stdio: stdioSchema.optional(),
    timeouts: z
      .strictObject({
        connect: durationSchema.default(10_000),
        headers: durationSchema.default(120_000),
        // Longest silence inside a JSON response body (an SSE stream is governed by idle instead).
        body: durationSchema.default(120_000),
        // Longest silence inside the SSE answer to a POST (a call); GET streams may idle, so they are exempt.
        answerStream: durationSchema.default(300_000),
        idle: durationSchema.default(0),
        // Longest wait of a call (POST, DELETE) for a free connection; past it a 503 JSON-RPC error, never sent. 0: no wait.
        queue: durationSchema.default(10_000),
      })
      .prefault({}),
    tls: z
      .strictObject({
        ca: z.string().min(1, { error: 'must not be empty' }).optional(),
        rejectUnauthorized: z.boolean().default(true),
      })
      .prefault({}),
    // Connections for calls (POST, DELETE), each held until its answer (JSON or SSE) ends.
    maxConnections: z.number().int().min(1).default(4096),
    // Connections for GET streams, apart from the calls'; past them a GET gets a 405 (a session's own share
    // is server.maxGetStreamsPerSession).
    maxStreamConnections: z.number().int().min(1).default(1024),
    // Forward the client's Host header instead of the upstream's own (for upstreams that check Host themselves).
    preserveHost: z.boolean().default(false),
    // An OAuth-protected upstream: its discovery documents and authorization-server endpoints (see well-known.ts).
    oauth: z
      .strictObject({
        // Pass /.well-known/oauth-protected-resource, oauth-authorization-server and openid-configuration through.
        discovery: z.boolean().default(true),
        // Further paths passed through unchanged, each with everything below it (/authorize, /token, /register).
        paths: z.array(oauthPathSchema).default([]),
      })
      .prefault({}),
  })
  .superRefine(checkUpstreamKind);
