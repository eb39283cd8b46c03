// The calls waiting on one stdio MCP server (its process: stdio-process.ts). Its stdout is framed into
// lines (bounded: src/core/stdio-lines.ts), each line routed to the call that asked (by JSON-RPC id, or
// progress token) or to the session's GET stream; what a call receives is the child's line, byte for byte,
// as SSE `data:` events or a JSON body. The relays measure and judge it as they would an HTTP upstream's answer.
import { PassThrough } from 'node:stream';
import type { Logger } from 'pino';
import type { StdioUpstreamConfig } from '../config/schema.js';
import { lostResponseMessage } from '../core/errors.js';
import { type LineEnvelope, type LineEvent, LineFramer } from '../core/stdio-lines.js';
import { idKey } from '../inspect/pending-requests.js';
import {
  DATA,
  EVENT_END,
  JSON_HEADERS,
  lostOversizedAnswer,
  MAX_ABANDONED,
  noStreamAnswer,
  progressTokenOf,
  SSE_HEADERS,
  STDIN_BACKLOG_BYTES,
  type StdioCall,
  undeliverable,
} from './stdio-call.js';
import { StdioProcess } from './stdio-process.js';

export interface ChildOptions {
  spec: StdioUpstreamConfig;
  env: Record<string, string>;
  log: Logger;
  /** The session the child serves, or undefined for a tenant's sessionless pool. */
  sessionId: string | undefined;
  holdBytes: number;
  /** Headers every answer of this child carries (its session id). */
  answerHeaders: Record<string, string>;
  onExit(child: StdioChild): void;
  /** The process is running (the command was found and could be executed). */
  onSpawn(): void;
}

export class StdioChild {
  private readonly proc: StdioProcess;
  private readonly framer: LineFramer;
  private readonly calls = new Map<string, StdioCall>();
  /** Calls whose ids are in use by another call of this child (a sessionless pool): admitted in order. */
  private readonly blocked: { call: StdioCall; lines: Uint8Array[] }[] = [];
  private getStream: PassThrough | undefined;
  /**
   * Ids of abandoned calls whose answers may still come: while any may, an answer whose id comes last cannot
   * be given to "the only call waiting" before its end. Bounded: the oldest are forgotten first.
   */
  private readonly abandoned = new Set<string>();
  /** Where the current overflowing line goes, once that is known. */
  private overflow:
    | { call: StdioCall | undefined; stream: PassThrough | undefined; head: Uint8Array }
    | undefined;
  private exited: string | undefined;
  private stopping = false;
  lastActivity = Date.now();

  constructor(private readonly options: ChildOptions) {
    this.framer = new LineFramer(options.holdBytes);
    this.proc = new StdioProcess({
      spec: options.spec,
      env: options.env,
      log: options.log,
      sessionId: options.sessionId,
      onStdout: (chunk) => this.onStdout(chunk),
      onSpawn: options.onSpawn,
      onEnd: (detail) => this.ended(detail),
    });
  }

  get program(): string {
    return this.proc.program;
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  /** Running and not being ended: a session whose child is stopping is gone for its client. */
  get alive(): boolean {
    return this.exited === undefined && !this.stopping;
  }

  /** Why it could not be started (a bad command), if so. */
  get failedToStart(): string | undefined {
    return this.proc.startFailed;
  }

  get inFlight(): number {
    return new Set(this.calls.values()).size + this.blocked.length;
  }

  /** Can another request be written now? A child that stopped reading stdin holds at most STDIN_BACKLOG_BYTES. */
  get acceptsInput(): boolean {
    if (this.exited !== undefined) return true; // start() answers the call with how the child ended
    const stdin = this.proc.stdin;
    return stdin !== undefined && stdin.writableLength < STDIN_BACKLOG_BYTES;
  }

  setHoldBytes(bytes: number): void {
    this.framer.setHoldBytes(bytes);
  }

  /** Writes a call's lines and waits for its answers; a call whose ids another call uses waits its turn. */
  start(call: StdioCall, lines: Uint8Array[]): void {
    this.lastActivity = Date.now();
    if (this.exited !== undefined) {
      call.fail('unreachable', this.exited);
      return;
    }
    if ([...call.waiting.keys()].some((key) => this.calls.has(key))) {
      this.blocked.push({ call, lines });
      return;
    }
    for (const key of call.waiting.keys()) this.calls.set(key, call);
    this.write(lines);
  }

  /** Lines that wait for no answer (notifications, the client's responses to the child's requests). */
  write(lines: Uint8Array[]): void {
    this.lastActivity = Date.now();
    const stdin = this.proc.stdin;
    if (stdin === undefined || this.exited !== undefined) return;
    for (const line of lines) {
      stdin.write(line);
      stdin.write('\n');
    }
  }

  /** The call no longer wants its answers (its client left, or it timed out): they are dropped when they come. */
  abandon(call: StdioCall): void {
    for (const [key] of call.waiting) {
      if (this.calls.get(key) !== call) continue;
      this.calls.delete(key);
      this.abandoned.add(key);
      if (this.abandoned.size > MAX_ABANDONED) this.abandoned.delete(this.abandoned.values().next().value!);
    }
    call.waiting.clear();
    const index = this.blocked.findIndex((entry) => entry.call === call);
    if (index >= 0) this.blocked.splice(index, 1);
    this.admitBlocked();
  }

  /** The session's GET stream: what the child sends that no call asked for. False when one is open already. */
  openGetStream(open: (stream: PassThrough) => void): boolean {
    if (this.getStream !== undefined && !this.getStream.destroyed) return false;
    const stream = this.flowing(new PassThrough());
    this.getStream = stream;
    stream.once('close', () => {
      if (this.getStream === stream) this.getStream = undefined;
    });
    open(stream);
    if (this.exited !== undefined) stream.end();
    return true;
  }

  /** Ends the child: stdin closed, SIGTERM to its process group, SIGKILL after the grace. */
  async stop(reason: string): Promise<void> {
    this.stopping = true;
    await this.proc.stop(reason);
  }

  private ended(detail: string): void {
    if (this.exited !== undefined) return;
    this.exited = detail;
    const calls = new Set([...this.calls.values(), ...this.blocked.map((entry) => entry.call)]);
    this.calls.clear();
    this.blocked.length = 0;
    for (const call of calls) this.answerLost(call, detail);
    this.getStream?.end();
    this.options.onExit(this);
  }

  /** Every id the call still waits on gets a JSON-RPC error now, however far its answer had got. */
  private answerLost(call: StdioCall, detail: string): void {
    const ids = [...call.waiting.values()];
    call.waiting.clear();
    if (call.answer === undefined && this.proc.startFailed !== undefined) {
      call.fail('unreachable', detail);
      return;
    }
    if (call.answer !== undefined && !call.answer.sse) {
      call.answer.stream.destroy(new Error(detail));
      return;
    }
    const lines = ids.map((id) => Buffer.from(JSON.stringify(lostResponseMessage(id, detail))));
    if (call.answer === undefined && lines.length === 1 && call.mayAnswerJson) {
      this.openAnswer(call, false).end(lines[0]);
      return;
    }
    const stream = call.answer?.stream ?? this.openAnswer(call, true);
    // The child may have died inside a line it was writing to this stream: that event is closed first.
    if (this.overflow?.stream === stream) this.forward(stream, EVENT_END);
    for (const line of lines) this.forward(stream, Buffer.concat([DATA, line, EVENT_END]));
    if (!stream.destroyed) stream.end();
  }

  private openAnswer(call: StdioCall, sse: boolean): PassThrough {
    const stream = this.flowing(new PassThrough());
    call.answer = { sse, stream };
    call.open(200, { ...(sse ? SSE_HEADERS : JSON_HEADERS), ...this.options.answerHeaders }, stream);
    return stream;
  }

  /** A slow client holds the child's output (paused on a full stream), not the edge's memory. */
  private flowing(stream: PassThrough): PassThrough {
    const resume = () => this.proc.resumeOutput();
    stream.on('drain', resume);
    stream.once('close', resume);
    return stream;
  }

  private onStdout(chunk: Buffer): void {
    this.lastActivity = Date.now();
    for (const event of this.framer.push(chunk)) this.onLine(event);
  }

  private onLine(event: LineEvent): void {
    switch (event.kind) {
      case 'line':
        this.route(event.envelope, event.bytes);
        return;
      case 'overflow': {
        const call = this.destinationOf(event.envelope, undefined);
        this.overflow = { call, stream: undefined, head: event.head };
        if (call !== undefined && this.overflowKnown(event.envelope, call)) {
          this.overflow.stream = this.eventStart(call, event.envelope);
          this.forward(this.overflow.stream, event.head);
          this.overflow.head = new Uint8Array(0);
        } else if (
          call === undefined &&
          event.envelope.method !== undefined &&
          this.getStream !== undefined
        ) {
          // An oversized message no call asked for: the GET stream's relay drops it, warns the client, and
          // answers a request among them for the child, as for an HTTP server's.
          this.overflow.stream = this.getStream;
          this.forward(this.getStream, DATA);
          this.forward(this.getStream, event.head);
          this.overflow.head = new Uint8Array(0);
        }
        return;
      }
      case 'overflow-data':
        if (this.overflow?.stream !== undefined) this.forward(this.overflow.stream, event.bytes);
        return;
      case 'overflow-end': {
        const overflow = this.overflow;
        this.overflow = undefined;
        // The answer of an abandoned call (refused as it crossed the ceiling) has come: its id is no longer
        // one that might still come, or every later oversized line would wait for its own end.
        if (event.envelope.method === undefined && event.envelope.id !== undefined)
          this.abandoned.delete(idKey(event.envelope.id));
        if (overflow === undefined) return;
        if (overflow.stream !== undefined && overflow.call === undefined) {
          this.forward(overflow.stream, EVENT_END);
          return;
        }
        if (overflow.stream !== undefined) {
          this.eventEnd(overflow.call, event.envelope, overflow.stream);
          return;
        }
        // Its destination became known only at its end (the id came last, several calls wait).
        const call = this.destinationOf(event.envelope, undefined);
        if (call === undefined) {
          this.undeliverable(event.envelope, event.totalBytes);
          return;
        }
        const id = event.envelope.id ?? null;
        const line = call.enforce ? overflow.head : lostOversizedAnswer(id, event.totalBytes);
        const stream = this.eventStart(call, event.envelope);
        this.forward(stream, line);
        this.eventEnd(call, event.envelope, stream);
      }
    }
  }

  /** An overflowing line can be streamed on only once its call is certain: its id, or the only call waiting. */
  private overflowKnown(envelope: LineEnvelope, call: StdioCall): boolean {
    if (envelope.id !== undefined) return true;
    return this.abandoned.size === 0 && new Set(this.calls.values()).size === 1 && call.waiting.size === 1;
  }

  /** The call a message goes to: the answer's id, a progress token, or else the only call waiting. */
  private destinationOf(envelope: LineEnvelope, bytes: Uint8Array | undefined): StdioCall | undefined {
    const isAnswer = envelope.method === undefined;
    if (isAnswer && envelope.id !== undefined) {
      const key = idKey(envelope.id);
      this.abandoned.delete(key);
      return this.calls.get(key);
    }
    if (envelope.method === 'notifications/progress' && bytes !== undefined) {
      const token = progressTokenOf(bytes);
      if (token !== undefined) {
        for (const call of this.calls.values()) if (call.progressTokens.has(token)) return call;
      }
    }
    const calls = new Set(this.calls.values());
    if (calls.size === 1) return [...calls][0];
    return undefined;
  }

  private route(envelope: LineEnvelope, bytes: Uint8Array): void {
    const isAnswer = envelope.method === undefined && envelope.id !== undefined;
    const call = isAnswer || envelope.method !== undefined ? this.destinationOf(envelope, bytes) : undefined;
    if (call !== undefined) {
      const stream = this.eventStart(call, envelope);
      this.forward(stream, bytes);
      this.eventEnd(call, envelope, stream);
      return;
    }
    if (!isAnswer && envelope.method !== undefined && this.getStream !== undefined) {
      this.forward(this.getStream, Buffer.concat([DATA, bytes, EVENT_END]));
      return;
    }
    this.undeliverable(envelope, bytes.length);
  }

  /** A message no call and no GET stream can take: logged, and a request among them answered for the child. */
  private undeliverable(envelope: LineEnvelope, bytes: number): void {
    const { what, why } = undeliverable(envelope);
    this.proc.droppedLineLog.write('warn', { message: what, bytes }, why);
    if (envelope.method !== undefined && envelope.id !== undefined) {
      // A request nobody can answer: the child hears so, rather than waiting.
      this.write([noStreamAnswer(envelope.id)]);
    }
  }

  /** Opens (or continues) the call's answer for one message: a JSON body or an SSE event. */
  private eventStart(call: StdioCall, envelope: LineEnvelope): PassThrough {
    const isAnswer = envelope.method === undefined;
    if (call.answer === undefined) {
      const sse = !(call.mayAnswerJson && isAnswer);
      const stream = this.openAnswer(call, sse);
      if (sse) this.forward(stream, DATA);
      return stream;
    }
    if (call.answer.sse) this.forward(call.answer.stream, DATA);
    return call.answer.stream;
  }

  private eventEnd(call: StdioCall | undefined, envelope: LineEnvelope, stream: PassThrough): void {
    if (call === undefined) return;
    if (call.answer?.sse) this.forward(stream, EVENT_END);
    if (envelope.method === undefined && envelope.id !== undefined) {
      const key = idKey(envelope.id);
      if (this.calls.get(key) === call) this.calls.delete(key);
      call.waiting.delete(key);
    }
    if (call.waiting.size === 0) {
      if (!stream.destroyed) stream.end();
      this.admitBlocked();
    }
  }

  private forward(stream: PassThrough, bytes: Uint8Array): void {
    if (stream.destroyed || stream.writableEnded) return;
    if (!stream.write(bytes)) this.proc.pauseOutput();
  }

  private admitBlocked(): void {
    for (let i = 0; i < this.blocked.length; ) {
      const entry = this.blocked[i]!;
      if ([...entry.call.waiting.keys()].some((key) => this.calls.has(key))) {
        i++;
        continue;
      }
      this.blocked.splice(i, 1);
      for (const key of entry.call.waiting.keys()) this.calls.set(key, entry.call);
      this.write(entry.lines);
    }
  }
}
