// What a stdio MCP server makes mcp-edge log, bounded: its stderr, read line by line into the log with its
// session (each line cut at STDERR_LINE_BYTES), and the warnings for stdout lines that are dropped (not
// JSON-RPC, or for no one). Each goes through a LogLimit: at most LOG_LINES_PER_WINDOW lines per window,
// the rest counted and summed up in one warning, so a server that floods either costs neither memory nor
// the log.
import type { Logger } from 'pino';

export const STDERR_LINE_BYTES = 2048;
export const LOG_LINES_PER_WINDOW = 100;
const WINDOW_MS = 10_000;

/** Log lines of one kind for one child: LOG_LINES_PER_WINDOW per window, the rest counted and summed up. */
export class LogLimit {
  private windowStart = Date.now();
  private logged = 0;
  private suppressed = 0;
  /** Sums up the window's suppressed lines at its end, even if the child then goes quiet. */
  private summary: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: Logger,
    private readonly fields: Record<string, unknown>,
    /** What the lines are, for the summary: "stdio MCP server stderr: lines". */
    private readonly what: string,
  ) {}

  write(level: 'info' | 'warn', extra: Record<string, unknown>, message: string): void {
    const now = Date.now();
    if (now - this.windowStart > WINDOW_MS) {
      this.summarize();
      this.windowStart = now;
      this.logged = 0;
    }
    if (this.logged >= LOG_LINES_PER_WINDOW) {
      this.suppressed++;
      this.summary ??= setTimeout(() => this.summarize(), this.windowStart + WINDOW_MS - now).unref();
      return;
    }
    this.logged++;
    this.log[level]({ ...this.fields, ...extra }, message);
  }

  /** One warning for what was not logged (the child is gone, or the window ended). */
  summarize(): void {
    clearTimeout(this.summary);
    this.summary = undefined;
    if (this.suppressed === 0) return;
    this.log.warn(
      { ...this.fields, suppressedLines: this.suppressed },
      `${this.what} not logged (more than ${LOG_LINES_PER_WINDOW} in ${WINDOW_MS / 1000} s)`,
    );
    this.suppressed = 0;
  }
}

/** A child's stderr, line by line, into a LogLimit. */
export class StderrLog {
  private line: Buffer[] = [];
  private lineBytes = 0;
  private cut = false;
  private readonly limit: LogLimit;

  constructor(log: Logger, fields: Record<string, unknown>) {
    this.limit = new LogLimit(log, fields, 'stdio MCP server stderr: lines');
  }

  push(chunk: Buffer): void {
    let from = 0;
    while (from < chunk.length) {
      const lf = chunk.indexOf(0x0a, from);
      const end = lf < 0 ? chunk.length : lf;
      const room = STDERR_LINE_BYTES - this.lineBytes;
      if (end - from > room) this.cut = true;
      if (room > 0 && end > from) {
        const piece = chunk.subarray(from, Math.min(end, from + room));
        this.line.push(Buffer.from(piece));
        this.lineBytes += piece.length;
      }
      if (lf < 0) return;
      this.emit();
      from = lf + 1;
    }
  }

  /** The child is gone: its last line without LF, and what was not logged. */
  flush(): void {
    if (this.lineBytes > 0) this.emit();
    this.limit.summarize();
  }

  private emit(): void {
    const text = Buffer.concat(this.line).toString('utf8').replace(/\r$/, '');
    const cut = this.cut;
    this.line = [];
    this.lineBytes = 0;
    this.cut = false;
    if (text.trim() === '') return;
    this.limit.write('info', { stderr: text, ...(cut ? { cut: true } : {}) }, 'stdio MCP server stderr');
  }
}
