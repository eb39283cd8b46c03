// The demo server's event store, for resumable SSE streams (Last-Event-ID), bounded in events.
import type { EventId, EventStore, StreamId } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/**
 * An in-memory event store for resumability, bounded so that a demo that sends many large
 * results does not keep them all: the oldest events are evicted past `maxEvents`.
 */
export class BoundedEventStore implements EventStore {
  private readonly events = new Map<EventId, { streamId: StreamId; message: JSONRPCMessage }>();
  private counter = 0;

  constructor(private readonly maxEvents = 1000) {}

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    this.counter += 1;
    const eventId = `${streamId}_${String(this.counter).padStart(10, '0')}`;
    this.events.set(eventId, { streamId, message });
    for (const oldest of this.events.keys()) {
      if (this.events.size <= this.maxEvents) break;
      this.events.delete(oldest);
    }
    return eventId;
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    return this.events.get(eventId)?.streamId;
  }

  async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const streamId = this.events.get(lastEventId)?.streamId;
    if (streamId === undefined) return '';
    let after = false;
    for (const [eventId, event] of [...this.events]) {
      if (after && event.streamId === streamId) await send(eventId, event.message);
      if (eventId === lastEventId) after = true;
    }
    return streamId;
  }
}
