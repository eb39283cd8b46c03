// The one guard for code the shell runs outside Fastify's own try/catch: stream 'data'/'end'/'error'/'close'
// listeners, timers and immediates, undici and node:http callbacks, the relays. Fastify catches what a route
// handler or a hook it runs throws; nothing catches what a callback of another library throws, and Node ends
// the process for it, with every exchange in flight. Each such callback is wrapped here, with what its
// exchange does when it throws (ClientResponse.fail: answered or its connection closed, logged at error
// level), so a failure ends one exchange and the edge keeps serving.

/** Wraps a callback so that what it throws goes to the guard's failure handler instead of the process. */
export type Guard = <A extends unknown[]>(fn: (...args: A) => void) => (...args: A) => void;

/** A guard that hands what its callbacks throw to `onThrow`, which must not throw itself. */
export function guardWith(onThrow: (err: unknown) => void): Guard {
  return (fn) =>
    (...args) => {
      try {
        fn(...args);
      } catch (err) {
        onThrow(err);
      }
    };
}

/** What was thrown, as an Error (a library may throw anything). */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}

/** The error line of a failed exchange, wherever it is caught (the guard, Fastify's error handler). */
export const EXCHANGE_FAILED = 'mcp-edge failed while serving an exchange; it ends here, the edge serves on';
