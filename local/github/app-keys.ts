// A GitHub App's key pair and JWT for tests and `make dev`: RS256, iat a minute back, exp at most
// ten minutes ahead, iss the App's id — what GitHub asks of an App's JWT.
import { createSign, generateKeyPairSync } from 'node:crypto';

export interface AppKeys {
  privateKeyPem: string;
  publicKeyPem: string;
}

export function makeAppKeys(): AppKeys {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A JWT for the App; `claims` overrides iat/exp/iss (seconds) to make bad ones. */
export function appJwt(
  appId: number,
  privateKeyPem: string,
  nowMs = Date.now(),
  claims: Partial<{ iat: number; exp: number; iss: unknown }> = {},
): string {
  const now = Math.floor(nowMs / 1000);
  const payload = { iat: now - 60, exp: now + 540, iss: String(appId), ...claims };
  const signed = `${part({ alg: 'RS256', typ: 'JWT' })}.${part(payload)}`;
  return `${signed}.${createSign('RSA-SHA256').update(signed).sign(privateKeyPem).toString('base64url')}`;
}
