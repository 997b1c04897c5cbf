// pino with secrets redacted and phone numbers masked before they reach a log line.
import { pino, type Logger } from 'pino';
import { maskPhone } from '../common/session/display.ts';

export const REDACT_PATHS = [
  'authToken', 'token', 'signingKey', 'password', 'authorization', '*.authToken', '*.token', '*.signingKey', '*.password',
  '*.authorization', 'headers.authorization', 'req.headers.authorization', 'req.headers["x-twilio-signature"]',
  'headers["x-twilio-signature"]', 'config.twilio.authToken', 'config.media.signingKey', 'config.webChat.token',
];

const PHONE = /(whatsapp:)?\+[1-9][0-9]{6,14}/g;

/** Masks every E.164 number in a log string: +14155550123 → +1415•••0123. */
export const maskPhonesIn = (s: string) => s.replace(PHONE, (m) => maskPhone(m));

export function createLogger(level = 'info', destination?: pino.DestinationStream): Logger {
  return pino({
    level,
    base: { component: 'relay' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    hooks: {
      logMethod(args, method) {
        method.apply(this, args.map((a) => (typeof a === 'string' ? maskPhonesIn(a) : a)) as Parameters<typeof method>);
      },
    },
    formatters: {
      log: (object) => JSON.parse(maskPhonesIn(JSON.stringify(object))) as Record<string, unknown>,
    },
  }, destination);
}
export type { Logger };
