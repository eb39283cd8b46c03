// The client side of the model of the exchange (issue 42, item 1): a raw Streamable HTTP client whose every
// response (a POST's JSON body or SSE stream, a GET stream) is read as it arrives, as the SDKs read it (fetch's
// lossy UTF-8, eventsource-parser), and kept: each message it could read, the bytes it could not, and the last
// event id it saw (to resume from).
import { createParser } from 'eventsource-parser';
import { MCP_POST_HEADERS } from './handles.js';

const utf8 = new TextDecoder();

/** The label of a stream a client opened to read a stream again from its start: what it reads is no new answer. */
export const REPLAY = 'replay-';

export class ClientStream {
  status: number | undefined;
  /** Every message read, in order. */
  readonly messages: unknown[] = [];
  /** Bodies or events a client could not read as JSON. */
  unreadable = 0;
  lastEventId: string | undefined;
  /** The body of a refusal (a status past 2xx): the edge's or the upstream's error, no answer to a call. */
  refusal: string | undefined;
  ended = false;
  readonly #abort = new AbortController();

  constructor(
    readonly label: string,
    url: string,
    init: RequestInit,
  ) {
    void this.#read(url, init);
  }

  abort(): void {
    this.#abort.abort();
  }

  async #read(url: string, init: RequestInit): Promise<void> {
    try {
      const res = await fetch(url, { ...init, signal: this.#abort.signal });
      this.status = res.status;
      if (res.headers.get('content-type')?.startsWith('text/event-stream') === true) {
        const parser = createParser({
          onEvent: (event) => {
            if (event.id !== undefined) this.lastEventId = event.id;
            if (event.data !== '') this.#take(event.data);
          },
        });
        const decoder = new TextDecoder();
        for await (const chunk of res.body ?? []) parser.feed(decoder.decode(chunk, { stream: true }));
      } else {
        const text = utf8.decode(await res.arrayBuffer());
        if (res.status >= 300) this.refusal = text;
        else if (text !== '') this.#take(text);
      }
    } catch {
      // Aborted by the test, or cut: what arrived is what the client has.
    }
    this.ended = true;
  }

  #take(text: string): void {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.unreadable++;
      return;
    }
    for (const message of Array.isArray(value) ? value : [value]) this.messages.push(message);
  }
}

/** One client's session with the edge: its id, its protocol headers, its streams. */
export class ClientSession {
  readonly streams: ClientStream[] = [];

  constructor(
    readonly tag: string,
    readonly url: string,
    readonly sessionId: string,
  ) {}

  static async open(tag: string, url: string): Promise<ClientSession> {
    const res = await fetch(url, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: `${tag}-init`,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: tag, version: '1' } },
      }),
    }).catch((err: unknown) => {
      // fetch says only "fetch failed": the socket's own error is its cause.
      const cause = (err as { cause?: unknown }).cause;
      throw new Error(`initialize through the edge failed: ${String(cause ?? err)}`, { cause: err });
    });
    await res.arrayBuffer();
    const sessionId = res.headers.get('mcp-session-id');
    if (sessionId === null)
      throw new Error(`initialize through the edge gave no session (status ${res.status})`);
    return new ClientSession(tag, url, sessionId);
  }

  get headers(): Record<string, string> {
    return { 'mcp-session-id': this.sessionId, 'mcp-protocol-version': '2025-11-25' };
  }

  post(label: string, body: unknown): ClientStream {
    const stream = new ClientStream(label, this.url, {
      method: 'POST',
      headers: { ...MCP_POST_HEADERS, ...this.headers },
      body: JSON.stringify(body),
    });
    this.streams.push(stream);
    return stream;
  }

  get(label: string, lastEventId?: string): ClientStream {
    const headers: Record<string, string> = { ...this.headers, accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    const stream = new ClientStream(label, this.url, { method: 'GET', headers });
    this.streams.push(stream);
    return stream;
  }

  /** Every message this session's client read, on any of its streams but those it asked to replay. */
  messages(): unknown[] {
    return this.streams
      .filter((stream) => !stream.label.startsWith(REPLAY))
      .flatMap((stream) => stream.messages);
  }

  async delete(): Promise<void> {
    for (const stream of this.streams) stream.abort();
    await fetch(this.url, { method: 'DELETE', headers: this.headers }).then((res) => res.arrayBuffer());
  }
}

/** Waits until `check` holds, polling each event-loop turn, at most `ms`. */
export async function until(check: () => boolean, what: () => string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
