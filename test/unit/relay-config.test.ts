// Relay configuration: defaults, and a bad value stops start-up naming the variable.
import { describe, expect, it } from 'vitest';
import { SESSION_DEFAULTS } from '../../common/session/defaults.ts';
import { ConfigError, loadConfig } from '../../relay/config.ts';

const base = {
  PUBLIC_URL: 'https://tether.example.com/',
  TETHER_REPO_URL: 'https://github.com/acme/web.git',
  RELAY_MEDIA_SIGNING_KEY: 'k'.repeat(32),
  TETHER_PHONE_HASH_KEY: 'h'.repeat(32),
  RELAY_WEB_CHAT_TOKEN: 't'.repeat(20),
};
const twilioVars = {
  TWILIO_ACCOUNT_SID: `AC${'a'.repeat(32)}`,
  TWILIO_AUTH_TOKEN: 'secret',
  TWILIO_WHATSAPP_FROM: 'whatsapp:+14155238886',
};

describe('loadConfig', () => {
  it('fills defaults and derives the webhook URL from PUBLIC_URL', () => {
    const c = loadConfig({ ...base, ALLOWED_NUMBERS: '+14155550123, +447700900123' });
    expect(c.webhookUrl).toBe('https://tether.example.com/webhook');
    expect([...c.allowedNumbers]).toEqual(['+14155550123', '+447700900123']);
    expect(c).toMatchObject({
      namespace: 'tether',
      port: 8080,
      timeouts: SESSION_DEFAULTS.timeouts,
      maxQueued: SESSION_DEFAULTS.maxQueued,
      progressBatchMs: 15_000,
      progressMaxGapMs: 60_000,
      progressMessages: 6,
      sessionMessages: 30,
      cost: { dailyUsd: 10, timeZone: 'UTC', runPauseUsd: 2 },
      twilio: undefined,
    });
    expect(c.media).toMatchObject({ maxBytes: 5 * 1024 * 1024, ttlMs: 86_400_000, urlTtlMs: 600_000 });
    expect(loadConfig({ ...base, TETHER_MAX_QUEUED: '2' }).maxQueued).toBe(2);
    expect(loadConfig({ ...base, ...twilioVars, TWILIO_API_URL: 'http://127.0.0.1:9' }).twilio).toMatchObject({
      apiUrl: 'http://127.0.0.1:9',
    });
  });

  it('gives the upload limits, the listening address and every secret the redactor must know', () => {
    const c = loadConfig({
      ...base,
      ...twilioVars,
      RELAY_TOKEN_REVIEW_FAILURE_TTL: '2s',
      RELAY_BIND_ADDRESS: '127.0.0.1',
    });
    expect(c.uploads).toEqual({
      sessionFiles: 100,
      sessionBytes: 50 * 1024 * 1024,
      ratePerMinute: 30,
      concurrency: 4,
      timeoutMs: 30_000,
      review: { okTtlMs: 30_000, failureTtlMs: 2000, maxEntries: 1000 },
    });
    expect(c.bindAddress).toBe('127.0.0.1');
    expect(loadConfig(base).bindAddress).toBe('0.0.0.0');
    expect(c.secrets.sort()).toEqual(['h'.repeat(32), 'k'.repeat(32), 'secret', 't'.repeat(20)]);
  });

  it.each([
    ['RELAY_UPLOAD_CONCURRENCY', { RELAY_UPLOAD_CONCURRENCY: '0' }],
    ['RELAY_TOKEN_REVIEW_TTL', { RELAY_TOKEN_REVIEW_TTL: 'a while' }],
    ['RELAY_BIND_ADDRESS', { RELAY_BIND_ADDRESS: 'localhost; rm -rf' }],
    ['PUBLIC_URL', { PUBLIC_URL: undefined }],
    ['PUBLIC_URL', { PUBLIC_URL: 'tether.example.com' }],
    ['TETHER_REPO_URL', { TETHER_REPO_URL: undefined }],
    ['RELAY_MEDIA_SIGNING_KEY', { RELAY_MEDIA_SIGNING_KEY: 'short' }],
    ['TETHER_PHONE_HASH_KEY', { TETHER_PHONE_HASH_KEY: undefined }],
    ['TETHER_PHONE_HASH_KEY', { TETHER_PHONE_HASH_KEY: 'h'.repeat(31) }],
    ['ALLOWED_NUMBERS', { ALLOWED_NUMBERS: '+14155550123,4155550999' }],
    ['RELAY_PORT', { RELAY_PORT: '99999' }],
    ['RELAY_PORT', { RELAY_PORT: 'eighty' }],
    ['TETHER_APPROVAL_TIMEOUT', { TETHER_APPROVAL_TIMEOUT: '30 minutes' }],
    ['TETHER_MAX_QUEUED', { TETHER_MAX_QUEUED: '51' }],
    ['TETHER_MAX_QUEUED', { TETHER_MAX_QUEUED: 'five' }],
    ['RELAY_PROGRESS_BATCH', { RELAY_PROGRESS_BATCH: 'soon' }],
    ['RELAY_PROGRESS_BATCH', { RELAY_PROGRESS_BATCH: '0s', RELAY_PROGRESS_MAX_GAP: '0s' }],
    ['RELAY_PROGRESS_BATCH', { RELAY_PROGRESS_BATCH: '50ms' }],
    ['RELAY_INBOUND_IMAGE_TIMEOUT', { RELAY_INBOUND_IMAGE_TIMEOUT: '0s' }],
    ['RELAY_INBOUND_IMAGE_TIMEOUT', { RELAY_INBOUND_IMAGE_TIMEOUT: '999ms' }],
    ['RELAY_UPLOAD_TIMEOUT', { RELAY_UPLOAD_TIMEOUT: '0ms' }],
    ['RELAY_PROGRESS_MAX_GAP', { RELAY_PROGRESS_BATCH: '30s', RELAY_PROGRESS_MAX_GAP: '10s' }],
    ['RELAY_PROGRESS_MESSAGES', { RELAY_PROGRESS_MESSAGES: '0' }],
    ['RELAY_SESSION_MESSAGES', { RELAY_SESSION_MESSAGES: '-3' }],
    ['RELAY_SESSION_MESSAGES', { RELAY_SESSION_MESSAGES: '2' }],
    ['RELAY_DAILY_BUDGET_USD', { RELAY_DAILY_BUDGET_USD: '-1' }],
    ['RELAY_DAILY_BUDGET_USD', { RELAY_DAILY_BUDGET_USD: 'ten' }],
    ['RELAY_DAILY_BUDGET_USD', { RELAY_DAILY_BUDGET_USD: '1e9' }],
    ['RELAY_RUN_PAUSE_USD', { RELAY_RUN_PAUSE_USD: '-2' }],
    ['RELAY_BUDGET_TIMEZONE', { RELAY_BUDGET_TIMEZONE: 'Mars/Olympus_Mons' }],
    ['TWILIO_ACCOUNT_SID', { TWILIO_ACCOUNT_SID: 'nope' }],
    ['TWILIO_WHATSAPP_FROM', { TWILIO_ACCOUNT_SID: `AC${'a'.repeat(32)}`, TWILIO_AUTH_TOKEN: 'x' }],
    ['TWILIO_ACCOUNT_SID', { RELAY_WEB_CHAT_TOKEN: undefined }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['TETHER_LOG_LEVEL', { TETHER_LOG_LEVEL: 'loud' }],
    ['TETHER_DAILY_BUDGET_USD', { TETHER_DAILY_BUDGET_USD: 'ten' }],
    ['TETHER_BUDGET_TIMEZONE', { TETHER_BUDGET_TIMEZONE: 'Mars/Olympus_Mons' }],
  ])('names %s when it is wrong', (variable, change) => {
    const attempt = () => loadConfig({ ...base, ...change });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(new RegExp(`^${variable}: `));
  });

  it('turns WhatsApp buttons on unless TWILIO_BUTTONS is false; refuses other words', () => {
    expect(loadConfig({ ...base, ...twilioVars }).twilio?.buttons).toBe(true);
    expect(loadConfig({ ...base, ...twilioVars, TWILIO_BUTTONS: 'false' }).twilio?.buttons).toBe(false);
    expect(() => loadConfig({ ...base, ...twilioVars, TWILIO_BUTTONS: 'no' })).toThrow(/^TWILIO_BUTTONS:/);
  });

  it('never echoes a secret in the error', () => {
    expect(() => loadConfig({ ...base, RELAY_MEDIA_SIGNING_KEY: 'hunter2' })).toThrow(/^(?!.*hunter2)/s);
  });

  it('reads the names the controller reads; the old relay names still work, each reported once naming the new', () => {
    const reported: string[] = [];
    const onRenamed = (old: string, current: string) => reported.push(`${old} → ${current}`);
    const current = { TETHER_LOG_LEVEL: 'debug', TETHER_DAILY_BUDGET_USD: '3', TETHER_BUDGET_TIMEZONE: 'Asia/Tokyo' };
    const old = { LOG_LEVEL: 'debug', RELAY_DAILY_BUDGET_USD: '3', RELAY_BUDGET_TIMEZONE: 'Asia/Tokyo' };
    for (const names of [current, old]) {
      const c = loadConfig({ ...base, ...names }, onRenamed);
      expect([c.logLevel, c.cost.dailyUsd, c.cost.timeZone]).toEqual(['debug', 3, 'Asia/Tokyo']);
    }
    expect(reported).toEqual([
      'LOG_LEVEL → TETHER_LOG_LEVEL',
      'RELAY_DAILY_BUDGET_USD → TETHER_DAILY_BUDGET_USD',
      'RELAY_BUDGET_TIMEZONE → TETHER_BUDGET_TIMEZONE',
    ]);
  });
});

const quiet = () => undefined;
const load = (more: Record<string, string>) => loadConfig({ ...base, ...more }, quiet);

describe('the GitHub settings', () => {
  it('are off by default: no client, no poll, no merge', () => {
    expect(load({}).github).toEqual({ client: undefined, poll: undefined, merge: 'never' });
  });

  it('read the token file, the API URL, the poll and the merge setting', () => {
    const github = load({
      TETHER_GITHUB_TOKEN_FILE: '/var/run/tether/github/token',
      TETHER_GITHUB_API_URL: 'https://ghe.example.com/api/v3/',
      TETHER_GITHUB_POLL_SECONDS: '60',
      TETHER_GITHUB_MERGE: 'whenGreen',
    }).github;
    expect(github).toEqual({
      client: {
        apiUrl: 'https://ghe.example.com/api/v3',
        tokenFile: '/var/run/tether/github/token',
        timeoutMs: 10_000,
      },
      poll: { intervalMs: 60_000, maxPerRound: 50 },
      merge: 'whenGreen',
    });
  });

  it('refuse a poll or a merge without a token file, and bad values, naming the variable', () => {
    expect(() => load({ TETHER_GITHUB_POLL_SECONDS: '30' })).toThrow(
      /TETHER_GITHUB_POLL_SECONDS.*TETHER_GITHUB_TOKEN_FILE/,
    );
    expect(() => load({ TETHER_GITHUB_MERGE: 'whenGreen' })).toThrow(/TETHER_GITHUB_MERGE.*TETHER_GITHUB_TOKEN_FILE/);
    expect(() => load({ TETHER_GITHUB_MERGE: 'always' })).toThrow(/TETHER_GITHUB_MERGE/);
    expect(() => load({ TETHER_GITHUB_POLL_MAX: '0' })).toThrow(/TETHER_GITHUB_POLL_MAX/);
    expect(() => load({ TETHER_GITHUB_TIMEOUT: '100ms' })).toThrow(/TETHER_GITHUB_TIMEOUT.*at least 1s/);
  });
});
