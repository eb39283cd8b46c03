// The part of Express 5 the OAuth test fixtures use. Express ships no types and @types/express is not a
// dependency; the SDK's auth router, bearer middleware and demo provider are Express middleware, so the
// fixtures mount them on an Express app (the SDK's own dependency) typed by these few declarations.
declare module 'express' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';

  export interface Request extends IncomingMessage {
    body?: unknown;
    auth?: AuthInfo;
  }
  export interface Response extends ServerResponse {
    status(code: number): Response;
    json(body: unknown): Response;
    set(name: string, value: string): Response;
    redirect(url: string): void;
  }
  export type NextFunction = (error?: unknown) => void;
  export type RequestHandler = (req: Request, res: Response, next: NextFunction) => unknown;
  export interface Router extends RequestHandler {
    use(...handlers: RequestHandler[]): Router;
    get(path: string, ...handlers: RequestHandler[]): Router;
    all(path: string, ...handlers: RequestHandler[]): Router;
  }
  export interface Express {
    (req: IncomingMessage, res: ServerResponse): void;
    use(...handlers: RequestHandler[]): Express;
    use(path: string, ...handlers: RequestHandler[]): Express;
    get(path: string, ...handlers: RequestHandler[]): Express;
    post(path: string, ...handlers: RequestHandler[]): Express;
    delete(path: string, ...handlers: RequestHandler[]): Express;
  }
  interface ExpressModule {
    (): Express;
    json(options?: { limit?: string }): RequestHandler;
    Router(): Router;
  }
  const express: ExpressModule;
  export default express;
}
