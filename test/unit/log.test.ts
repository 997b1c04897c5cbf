// The one logger factory and redaction list every component uses.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, makeRedactor, redactDeep } from '../../common/log.ts';

function capture(options: { secrets?: string[]; bindings?: Record<string, string> } = {}) {
  const lines: string[] = [];
  const destination = new Writable({ write: (chunk, _e, done) => (lines.push(String(chunk)), done()) });
  const log = createLogger({
    component: 'test',
    level: 'info',
    redact: makeRedactor(options.secrets ?? []),
    bindings: options.bindings,
    destination,
  });
  return {
    log,
    output: () => lines.join(''),
    records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

describe('redactor', () => {
  it('replaces configured secrets and token-shaped strings', () => {
    const redact = makeRedactor(['my-very-secret-value']);
    expect(redact('a my-very-secret-value b ghp_0123456789abcdefghijABCD sk-ant-api03-abcdefghijk')).toBe(
      'a [redacted] b [redacted] [redacted]',
    );
  });

  it(`learns a secret read later: from then on it is redacted (plain and inside base64) in a logger built \
before`, () => {
    const redact = makeRedactor(['first-secret']);
    const lines: string[] = [];
    const destination = new Writable({ write: (chunk, _e, done) => (lines.push(String(chunk)), done()) });
    const log = createLogger({ component: 'test', level: 'info', redact, destination });
    const renewed = 'v1.renewed0installation0token';
    expect(redact(`t ${renewed}`)).toBe(`t ${renewed}`);
    redact.learn(renewed);
    redact.learn(renewed);
    log.info({ header: `Basic ${Buffer.from(`x-access-token:${renewed}`).toString('base64')}` }, `push ${renewed}`);
    expect(lines.join('')).not.toContain(renewed);
    expect(lines.join('')).not.toContain(Buffer.from(renewed).toString('base64').slice(4, 20));
    expect(redact(`first-secret ${renewed}`)).toBe('[redacted] [redacted]');
    expect(redact.known()).toEqual([renewed, 'first-secret']);
  });

  it('reaches every string of a JSON-like value', () => {
    const redact = makeRedactor(['s3cr3t']);
    expect(redactDeep({ a: ['x s3cr3t', { b: 's3cr3t' }], n: 1 }, redact)).toEqual({
      a: ['x [redacted]', { b: '[redacted]' }],
      n: 1,
    });
  });
});

describe('redactor against hostile inputs', () => {
  const SECRET = 'p@ss/w:rd+x y~Z9*';
  const redact = makeRedactor([SECRET, 'ghs_short']);
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  const jwt = (payload: object, signature = 'c2lnbmF0dXJlLXNpZ25hdHVyZQ') =>
    [
      Buffer.from('{"alg":"RS256","kid":"k1"}').toString('base64url'),
      Buffer.from(JSON.stringify(payload)).toString('base64url'),
      signature,
    ].join('.');
  const SA_TOKEN = jwt({ aud: ['tether-relay'], sub: 'system:serviceaccount:tether:s1-runner', exp: 1_900_000_000 });

  it.each([
    ['a ServiceAccount token', `token=${SA_TOKEN}`],
    ['a bearer header', `Authorization: Bearer ${SA_TOKEN}`],
    ['an unsigned JWT', `jwt ${jwt({ sub: 'x' }, '')}`],
    ['a JWT after punctuation', `("${SA_TOKEN}").`],
    ['a JWT in JSON', JSON.stringify({ nested: { value: SA_TOKEN } })],
  ])('catches %s', (_label, text) => {
    const out = redact(text);
    expect(out).toContain('[redacted]');
    expect(out).not.toMatch(/eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}/);
  });

  it.each([
    ['encodeURIComponent', encodeURIComponent(SECRET)],
    ['a form body', new URLSearchParams({ p: SECRET }).toString().slice(2)],
    ['lower-case hex', encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())],
    ['every character encoded', [...Buffer.from(SECRET)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')],
    ['half encoded', `p%40ss/w%3Ard+x%20y~Z9*`],
    ['encoded twice', encodeURIComponent(encodeURIComponent(SECRET))],
    ['in a URL', `https://h.example/cb?next=${encodeURIComponent(`https://x.example/?k=${SECRET}`)}`],
  ])('catches the secret URL-encoded: %s', (_label, text) => {
    expect(redact(`before ${text} after`)).toMatch(/^before .*\[redacted\].* after$/);
    expect(redact(text)).not.toContain('w%3Ard');
  });

  it.each([0, 1, 2, 3, 4, 5])('catches the secret inside base64 after %i other bytes, in both alphabets', (offset) => {
    const blob = Buffer.from(`${'x'.repeat(offset)}${SECRET}${'-tail'.repeat(offset)}`);
    for (const encoded of [blob.toString('base64'), blob.toString('base64url')]) {
      const out = redact(`data ${encoded} end`);
      expect(out).toContain('[redacted]');
      const left = out.split(' ')[1]!.split('[redacted]');
      const decoded = left.map((part) => Buffer.from(part, 'base64').toString('latin1')).join('');
      expect(decoded).not.toContain(SECRET.slice(2, -2));
    }
  });

  it('catches a Basic auth header and a base64 credentials file holding the secret', () => {
    expect(redact(`Authorization: Basic ${b64(`x-access-token:${SECRET}`)}`)).toContain('[redacted]');
    expect(redact(b64(JSON.stringify({ auths: { 'ghcr.io': { password: SECRET } } })))).toContain('[redacted]');
  });

  it('leaves ordinary text, other base64 and short look-alikes alone, and redacting twice changes nothing', () => {
    const plain = [
      'The quick brown fox, p@ss and w:rd',
      b64('an unrelated value of some length'),
      'eyJhbGciOi only one part',
      'a.b.c',
      'ghs_shor',
    ];
    for (const text of plain) expect(redact(text)).toBe(text);
    const once = redact(`${SECRET} ${encodeURIComponent(SECRET)} ${b64(SECRET)} ${SA_TOKEN}`);
    // base64 keeps its last bits
    expect(once).toMatch(/^\[redacted\] \[redacted\] \[redacted\][A-Za-z0-9+/]?=* \[redacted\]$/);
    expect(redact(once)).toBe(once);
  });

  it('stays fast on long hostile input', () => {
    const started = performance.now();
    redact(`${'%2'.repeat(50_000)}${'eyJ'.repeat(20_000)}${'p%40ss'.repeat(20_000)}`);
    expect(performance.now() - started).toBeLessThan(2000);
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
    log.info(
      {
        from: 'whatsapp:+14155550123',
        authToken: 'supersecret',
        headers: { authorization: 'Bearer abc' },
        spec: { phone: '+14155550199' },
      },
      'message from +14155550123',
    );
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
