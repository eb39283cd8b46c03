// The calls waiting on one stdio MCP server (its process: stdio-process.ts). Its stdout is framed into
// lines (bounded: src/core/stdio-lines.ts), each line routed to the call that asked (by JSON-RPC id, or
// progress token; which call holds which is src/core/call-owners.ts) or to the session's GET stream
// (stdio-get-stream.ts); what a call receives is the child's lines, byte for byte, as message events
// (MessageEvent): the shell frames them for the client and the relays judge them as they would an HTTP
// upstream's answer. On a tenant's shared child (clients without a session) a message goes only where its id
// or progress token says, or nowhere.
import type { PassThrough } from 'node:stream';
import type { Logger } from 'pino';
import type { StdioUpstreamConfig } from '../config/schema.js';
import { idKey } from '../core/client-names.js';
import { asError, guardWith } from '../core/guard.js';
import { edgeError } from '../core/refusals/answers.js';
import { type LineEnvelope, type LineEvent, LineFramer } from '../core/stdio-lines.js';
import { CallAdmission, type Destination } from './stdio-admission.js';
import {
  lostOversizedAnswer,
  MAX_ABANDONED,
  messageStream,
  STDIN_BACKLOG_BYTES,
  type StdioCall,
  undeliverable,
  undeliveredRequestAnswer,
} from './stdio-call.js';
import { stdioProgramName } from './stdio-command.js';
import { SessionGetStream } from './stdio-get-stream.js';
import { StdioProcess } from './stdio-process.js';
import type { MessageEvent, UndeliveredReason } from './upstream.js';

export interface ChildOptions {
  spec: StdioUpstreamConfig;
  env: Record<string, string>;
  log: Logger;
  /** The session the child serves, or undefined for a tenant's sessionless pool. */
  sessionId: string | undefined;
  holdBytes: number;
  onExit(child: StdioChild): void;
  /** The process is running (the command was found and could be executed). */
  onSpawn(): void;
  /** How long a call waits for an id or progress token another call holds (upstream.stdio.idWait). */
  idWaitMs: number;
  /** How long and how much of what the child sends may wait for the session's GET stream. */
  streamWait: { ms: number; bytes: number };
  /** A message of the child's was delivered to no client (it is logged here): counted. */
  onUndelivered(reason: UndeliveredReason): void;
}

export class StdioChild {
  private readonly proc: StdioProcess;
  private readonly framer: LineFramer;
  private readonly admission: CallAdmission;
  /** The session's GET stream; a tenant's shared child has none (its clients have no session). */
  private readonly getStream: SessionGetStream | undefined;
  /**
   * The current overflowing line: decided (its call, the GET stream, or dropped with a reason) once its
   * destination is known; undecided ones keep their head until the line's end names it.
   */
  private overflow:
    | {
        decided: boolean;
        call: StdioCall | undefined;
        stream: PassThrough | undefined;
        dropped: UndeliveredReason | undefined;
        head: Uint8Array;
      }
    | undefined;
  private exited: string | undefined;
  /** Routing its output threw: nothing more of it is routed. */
  private broken = false;
  private stopping = false;
  lastActivity = Date.now();

  constructor(private readonly options: ChildOptions) {
    this.framer = new LineFramer(options.holdBytes);
    this.admission = new CallAdmission({
      idWaitMs: options.idWaitMs,
      shared: options.sessionId === undefined,
      log: options.log,
      sessionId: options.sessionId,
      program: stdioProgramName(options.spec.command[0] ?? ''),
      write: (lines) => this.write(lines),
    });
    this.getStream =
      options.sessionId === undefined
        ? undefined
        : new SessionGetStream({
            waitMs: options.streamWait.ms,
            maxBytes: options.streamWait.bytes,
            flowing: (stream) => this.flowing(stream),
            forward: (stream, bytes, last) => this.forward(stream, bytes, last),
            drop: (envelope, bytes, reason) => this.undeliverable(envelope, bytes, reason),
            log: options.log,
            fields: { session: options.sessionId, program: stdioProgramName(options.spec.command[0] ?? '') },
          });
    this.proc = new StdioProcess({
      spec: options.spec,
      env: options.env,
      log: options.log,
      sessionId: options.sessionId,
      // The child's output serves every call it has: what routing it throws cannot end one exchange, so it
      // ends the child (its calls get errors for their ids, see ended) and never the process.
      onStdout: guardWith((err) => this.failed(err))((chunk: Buffer) => this.onStdout(chunk)),
      onSpawn: options.onSpawn,
      onEnd: (detail) => this.ended(detail),
    });
  }

  /** The session the child serves (issued with its initialize's answer); undefined: a tenant's shared child. */
  get sessionId(): string | undefined {
    return this.options.sessionId;
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

  /** Calls whose clients wait (those whose clients left do not keep the child from its idle timeout). */
  get inFlight(): number {
    return this.admission.inFlight;
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

  /** Writes a call's lines and waits for its answers; a call whose ids or tokens another holds waits its turn. */
  start(call: StdioCall, lines: Uint8Array[]): void {
    this.lastActivity = Date.now();
    if (this.exited !== undefined) {
      call.fail('unreachable', this.exited);
      return;
    }
    this.admission.start(call, lines);
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

  /**
   * The call no longer wants its answers (its client left, or it timed out): they are dropped when they come.
   * Its ids stay claimed until then, so no other call is given an answer that was not its own.
   */
  abandon(call: StdioCall): void {
    call.waiting.clear();
    this.admission.abandon(call);
    if (this.admission.owners.abandonedIds > MAX_ABANDONED && this.alive) {
      void this.stop(
        `more than ${MAX_ABANDONED} requests whose clients left are still unanswered; the MCP server is replaced`,
      );
    }
  }

  /** The session's client cancelled these ids (idKeys): see CallOwners.cancel. */
  cancelled(keys: readonly string[]): void {
    for (const key of keys) this.admission.owners.cancel(key);
  }

  /** The session's GET stream is open (one per session). */
  get streaming(): boolean {
    return this.getStream?.open !== undefined;
  }

  /** The session's GET stream: what the child sends that no call asked for. False when one is open already. */
  openGetStream(open: (stream: PassThrough) => void): boolean {
    return this.getStream?.openWith(open) ?? false;
  }

  /** Ends the child: stdin closed, SIGTERM to its process group, SIGKILL after the grace. */
  async stop(reason: string): Promise<void> {
    this.stopping = true;
    await this.proc.stop(reason);
  }

  /** What the edge threw while routing the child's output: logged with its stack; the child is replaced. */
  private failed(err: unknown): void {
    this.broken = true;
    this.options.log.error(
      { err: asError(err), pid: this.pid, program: this.program, session: this.sessionId },
      "mcp-edge failed routing an MCP server's output; that server is ended, its calls get errors, the edge serves on",
    );
    if (this.alive) void this.stop('mcp-edge failed routing its output');
  }

  private ended(detail: string): void {
    if (this.exited !== undefined) return;
    this.exited = detail;
    for (const call of this.admission.clear()) this.answerLost(call, detail);
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
    const lines = ids.map((id) => Buffer.from(JSON.stringify(edgeError('answer_lost', { detail }, id))));
    const stream = call.answer?.stream ?? this.openAnswer(call, lines.length > 0);
    // The child may have died inside a line it was writing to this stream: that message broke off.
    if (this.overflow?.stream === stream) this.cut(stream, detail);
    for (const line of lines) this.forward(stream, line, true);
    if (!stream.destroyed) stream.end();
  }

  private openAnswer(call: StdioCall, firstIsAnswer: boolean): PassThrough {
    const stream = this.flowing(messageStream());
    call.answer = { stream };
    call.open(stream, firstIsAnswer);
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
    if (this.broken) return; // what follows a failure is not routed: the child is being ended
    this.lastActivity = Date.now();
    for (const event of this.framer.push(chunk)) this.onLine(event);
  }

  private onLine(event: LineEvent): void {
    switch (event.kind) {
      case 'line':
        this.route(event.envelope, event.bytes);
        return;
      case 'overflow':
        this.overflowStart(event.envelope, event.head);
        return;
      case 'overflow-data':
        if (this.overflow?.stream !== undefined) this.forward(this.overflow.stream, event.bytes, false);
        return;
      case 'overflow-end':
        this.overflowEnd(event.envelope, event.totalBytes);
        this.admission.admitWaiting();
    }
  }

  /** An overflowing line streams on only once its destination is certain; else its head waits for its end. */
  private overflowStart(envelope: LineEnvelope, head: Uint8Array): void {
    const overflow = { decided: false, call: undefined, stream: undefined, dropped: undefined, head };
    this.overflow = overflow;
    let destination: Destination | undefined;
    if (envelope.method === undefined && envelope.id !== undefined) {
      destination = this.admission.destinationOf(envelope, undefined); // an answer whose id came first
    } else if (envelope.method === undefined && this.getStream !== undefined) {
      const only = this.admission.onlyPossibleAnswerer(); // its id may come last
      if (only !== undefined) destination = { call: only };
    } else if (envelope.method !== undefined && this.getStream !== undefined) {
      destination = this.admission.destinationOf(envelope, undefined);
    }
    if (destination === undefined) return;
    if ('none' in destination) {
      Object.assign(overflow, { decided: true, dropped: destination.none });
      return;
    }
    if ('call' in destination) {
      const stream = this.eventStart(destination.call, envelope);
      Object.assign(overflow, { decided: true, call: destination.call, stream });
      this.forward(stream, head, false);
      overflow.head = new Uint8Array(0);
      return;
    }
    const stream = this.getStream?.open;
    // An oversized message no call asked for: the GET stream's relay drops it, warns the client, and answers
    // a request among them for the child, as for an HTTP server's. With no stream open it cannot wait (it is
    // past what the edge holds): it is dropped at its end.
    if (stream === undefined) return;
    Object.assign(overflow, { decided: true, stream });
    this.forward(stream, head, false);
    overflow.head = new Uint8Array(0);
  }

  private overflowEnd(envelope: LineEnvelope, totalBytes: number): void {
    const overflow = this.overflow;
    this.overflow = undefined;
    if (overflow === undefined) return;
    if (overflow.decided) {
      if (overflow.dropped !== undefined) this.undeliverable(envelope, totalBytes, overflow.dropped);
      else if (overflow.call === undefined) this.forward(overflow.stream!, new Uint8Array(0), true);
      else {
        this.admission.answeredLate(overflow.call, envelope);
        this.forward(overflow.stream!, new Uint8Array(0), true);
        this.eventEnd(overflow.call, envelope, overflow.stream!);
      }
      return;
    }
    // Its destination became known only at its end (the id came last, several calls wait).
    const destination = this.admission.destinationOf(envelope, undefined);
    if (!('call' in destination)) {
      this.undeliverable(envelope, totalBytes, 'none' in destination ? destination.none : 'no_stream');
      return;
    }
    const call = destination.call;
    const id = envelope.id ?? null;
    const line = call.enforce ? overflow.head : lostOversizedAnswer(id, totalBytes);
    const stream = this.eventStart(call, envelope);
    this.forward(stream, line, true);
    this.eventEnd(call, envelope, stream);
  }

  private route(envelope: LineEnvelope, bytes: Uint8Array): void {
    if (envelope.method === undefined && envelope.id === undefined) {
      this.undeliverable(envelope, bytes.length, undefined);
      return;
    }
    const destination = this.admission.destinationOf(envelope, bytes);
    if ('call' in destination) {
      const stream = this.eventStart(destination.call, envelope);
      this.forward(stream, bytes, true);
      this.eventEnd(destination.call, envelope, stream);
    } else if ('none' in destination) {
      this.undeliverable(envelope, bytes.length, destination.none);
    } else if (this.getStream !== undefined) {
      this.getStream.send(envelope, bytes);
    }
    this.admission.admitWaiting();
  }

  /**
   * A message the edge delivers to no client: logged (rate-limited, as the child's stderr) and counted (a line
   * that is not JSON-RPC only logged), and a request among them answered for the child, so it does not wait.
   */
  private undeliverable(envelope: LineEnvelope, bytes: number, reason: UndeliveredReason | undefined): void {
    const { what, why } = undeliverable(envelope, reason);
    this.proc.droppedLineLog.write('warn', { message: what, bytes, reason }, why);
    if (reason === undefined) return;
    this.options.onUndelivered(reason);
    if (envelope.method !== undefined && envelope.id !== undefined) {
      this.write([undeliveredRequestAnswer(envelope.id, reason)]);
    }
  }

  /** The call's answer, opened by its first message. */
  private eventStart(call: StdioCall, envelope: LineEnvelope): PassThrough {
    return call.answer?.stream ?? this.openAnswer(call, envelope.method === undefined);
  }

  /** A message of the call is complete: its id is answered, and the answer ends with the call's last. */
  private eventEnd(call: StdioCall, envelope: LineEnvelope, stream: PassThrough): void {
    if (envelope.method === undefined && envelope.id !== undefined) call.waiting.delete(idKey(envelope.id));
    if (call.waiting.size === 0 && !stream.destroyed) stream.end();
  }

  /** A piece of the message in progress on `stream` (`last`: the message is complete after it). */
  private forward(stream: PassThrough, bytes: Uint8Array, last: boolean): void {
    this.send(stream, { kind: 'piece', bytes, last });
  }

  /** The message in progress on `stream` broke off. */
  private cut(stream: PassThrough, detail: string): void {
    this.send(stream, { kind: 'cut', detail });
  }

  private send(stream: PassThrough, event: MessageEvent): void {
    if (stream.destroyed || stream.writableEnded) return;
    if (!stream.write(event)) this.proc.pauseOutput();
  }
}
