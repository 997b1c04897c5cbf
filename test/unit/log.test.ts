// The one logger factory and redaction list every component uses.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, makeRedactor, redactDeep } from '../../common/log.ts';

function capture(options: { secrets?: string[]; bindings?: Record<string, string> } = {}) {
  const lines: string[] = [];
  const destination = new Writable({ write: (chunk, _e, done) => (lines.push(String(chunk)), done()) });
  const log = createLogger({ component: 'test', level: 'info', redact: makeRedactor(options.secrets ?? []), bindings: options.bindings, destination });
  return { log, output: () => lines.join(''), records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('redactor', () => {
  it('replaces configured secrets and token-shaped strings', () => {
    const redact = makeRedactor(['my-very-secret-value']);
    expect(redact('a my-very-secret-value b ghp_0123456789abcdefghijABCD sk-ant-api03-abcdefghijk')).toBe('a [redacted] b [redacted] [redacted]');
  });

  it('reaches every string of a JSON-like value', () => {
    const redact = makeRedactor(['s3cr3t']);
    expect(redactDeep({ a: ['x s3cr3t', { b: 's3cr3t' }], n: 1 }, redact)).toEqual({ a: ['x [redacted]', { b: '[redacted]' }], n: 1 });
  });
});

describe('logger', () => {
  it('names its component and extra bindings on every line', () => {
    const { log, records } = capture({ bindings: { identity: 'pod-0' } });
    log.child({ session: 's1' }).info('hello');
    expect(records()[0]).toMatchObject({ component: 'test', identity: 'pod-0', session: 's1', msg: 'hello' });
  });

  it('masks phone numbers and redacts secret fields and headers', () => {
    const { log, output } = capture();
    log.info({ from: 'whatsapp:+14155550123', authToken: 'supersecret', headers: { authorization: 'Bearer abc' }, spec: { phone: '+14155550199' } }, 'message from +14155550123');
    expect(output()).not.toContain('4155550123');
    expect(output()).toContain('+1415•••0123');
    expect(output()).not.toContain('supersecret');
    expect(output()).not.toContain('Bearer abc');
    expect(output()).not.toContain('4155550199');
  });

  it('keeps secret values out of messages, fields and errors', () => {
    const { log, output } = capture({ secrets: ['hunter2-secret'] });
    log.info({ detail: 'x hunter2-secret', nested: { token: 'abc' } }, 'message hunter2-secret');
    log.error({ err: new Error('failed with hunter2-secret') }, 'boom');
    expect(output()).not.toContain('hunter2-secret');
    expect(output()).not.toContain('"abc"');
    expect(output()).toContain('[redacted]');
  });

  it('logs an error object with its type, message, stack and cause', () => {
    const { log, records } = capture();
    const cause = new RangeError('disk full');
    log.error({ err: new TypeError('write failed', { cause }) }, 'write failed');
    const err = records()[0]!.err as { type: string; message: string; stack: string };
    expect(err.type).toBe('TypeError');
    expect(err.message).toBe('write failed: disk full');
    expect(err.stack).toMatch(/^TypeError: write failed\n\s+at /);
    expect(err.stack).toContain('caused by: RangeError: disk full');
  });
});
