// Client connections and how many responses each is carrying, so shutdown can close the idle ones itself
// (Node's own idle list misses a keep-alive connection whose earlier response was cut off).
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';

export interface ConnectionTracker {
  /** Counts a response on its connection until it closes. */
  track(request: FastifyRequest, reply: FastifyReply): void;
  closeIdle(): void;
}

export function trackConnections(server: Server): ConnectionTracker {
  const busyResponses = new Map<Socket, number>();
  server.on('connection', (socket: Socket) => {
    busyResponses.set(socket, 0);
    socket.once('close', () => busyResponses.delete(socket));
  });
  return {
    track(request, reply) {
      const socket = request.raw.socket;
      busyResponses.set(socket, (busyResponses.get(socket) ?? 0) + 1);
      reply.raw.once('close', () => {
        // A response the client walked away from leaves its connection half-open; it can never be reused.
        if (!reply.raw.writableFinished) socket.destroy();
        const busy = busyResponses.get(socket);
        if (busy !== undefined) busyResponses.set(socket, Math.max(0, busy - 1));
      });
    },
    closeIdle() {
      for (const [socket, busy] of busyResponses) if (busy === 0) socket.destroy();
    },
  };
}
