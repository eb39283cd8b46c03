// When shutdown ends which exchange, and how: GET exchanges when it begins, the others once the grace is over;
// a relay's own ending when its answer has begun, else the 503 with the shutdown error for the id; an exchange
// that would go upstream after that is refused (never sent); one whose response closed is let go.
import { EventEmitter } from 'node:events';
import type { FastifyReply } from 'fastify';
import { describe, expect, it } from 'vitest';
import type { EdgeHttpError } from '../../src/core/refusals/answers.js';
import type { Exchange, ShutdownEnding } from '../../src/exchange/exchange.js';
import { Shutdown } from '../../src/proxy/shutdown.js';

/** What Shutdown reads of a reply: its request's method and exchange, and its raw response's close. */
function replyOf(method: string, waiting: number | undefined, ending?: ShutdownEnding) {
  const ids = waiting === undefined ? [] : [waiting];
  const exchange = { pending: { size: ids.length, ids: () => ids }, shutdownEnding: ending };
  const raw = new EventEmitter();
  const reply = { request: { method, exchange: exchange as unknown as Exchange }, raw };
  return reply as unknown as FastifyReply & { raw: EventEmitter };
}

function shutdownWithAnswers() {
  const answered: { reply: FastifyReply; answer: EdgeHttpError }[] = [];
  const errors: string[] = [];
  const shutdown = new Shutdown((reply, answer) => answered.push({ reply, answer }), {
    warn() {},
    error: (_fields, message) => errors.push(message),
  });
  return { shutdown, answered, errors };
}

const bodyOf = (answer: EdgeHttpError | undefined) => JSON.parse(answer?.body ?? '{}');

describe('Shutdown', () => {
  it('ends GET exchanges when it begins and the others once the grace is over, each once', () => {
    const { shutdown, answered } = shutdownWithAnswers();
    const get = replyOf('GET', undefined);
    const post = replyOf('POST', 7);
    expect(shutdown.sending(get)).toBe(true);
    expect(shutdown.sending(post)).toBe(true);
    shutdown.begin();
    expect(answered.map((a) => a.reply)).toEqual([get]);
    get.raw.emit('close');
    shutdown.graceOver();
    expect(answered.map((a) => a.reply)).toEqual([get, post]);
    const answer = answered[1]?.answer;
    expect(answer?.status).toBe(503);
    expect(answer?.outcome).toBe('shutdown');
    expect(bodyOf(answer)).toMatchObject({
      id: 7,
      error: { code: -32603, data: { reason: 'shutting_down' } },
    });
  });

  it("leaves an answer that had begun to its relay's ending, and counts the SSE streams", () => {
    const { shutdown, answered } = shutdownWithAnswers();
    const ended: string[] = [];
    const stream = replyOf('POST', 1, { stream: true, end: () => ended.push('stream') });
    const json = replyOf('POST', 2, { stream: false, end: () => ended.push('json') });
    shutdown.sending(stream);
    shutdown.sending(json);
    expect(shutdown.streams()).toBe(1);
    shutdown.graceOver();
    expect(ended).toEqual(['stream', 'json']);
    expect(answered).toEqual([]);
  });

  it('does not end an exchange whose response closed, and reuses its place', () => {
    const { shutdown, answered } = shutdownWithAnswers();
    const first = replyOf('POST', 1);
    shutdown.sending(first);
    first.raw.emit('close');
    const second = replyOf('POST', 2);
    shutdown.sending(second);
    shutdown.graceOver();
    expect(answered.map((a) => a.reply)).toEqual([second]);
  });

  it('refuses, unsent, a GET that would go upstream after shutdown began, and anything after the grace', () => {
    const { shutdown, answered } = shutdownWithAnswers();
    shutdown.begin();
    expect(shutdown.sending(replyOf('POST', 3))).toBe(true);
    expect(shutdown.sending(replyOf('GET', undefined))).toBe(false);
    shutdown.graceOver();
    const late = replyOf('POST', 4);
    expect(shutdown.sending(late)).toBe(false);
    const refusal = answered.at(-1);
    expect(refusal?.reply).toBe(late);
    expect(refusal?.answer.status).toBe(503);
    expect(bodyOf(refusal?.answer)).toMatchObject({
      id: 4,
      error: { code: -32600, message: expect.stringMatching(/not sent/), data: { reason: 'shutting_down' } },
    });
  });

  it('goes on ending the others when one ending throws, and logs it', () => {
    const { shutdown, answered, errors } = shutdownWithAnswers();
    const broken = replyOf('POST', 1, {
      stream: true,
      end: () => {
        throw new Error('boom');
      },
    });
    const other = replyOf('POST', 2);
    shutdown.sending(broken);
    shutdown.sending(other);
    shutdown.graceOver();
    expect(answered.map((a) => a.reply)).toEqual([other]);
    expect(errors).toHaveLength(1);
  });
});
