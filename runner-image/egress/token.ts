// The supervisor's egress password, from the Pod's own Secret volume (controller/runner-egress.ts).
import { readFileSync } from 'node:fs';

/** The supervisor's egress password: 16 or more base64url characters (a trailing newline is tolerated). */
const EGRESS_PASSWORD = /^[A-Za-z0-9_-]{16,}$/;

/**
 * The password in the Pod's egress Secret file (TETHER_EGRESS_TOKEN_FILE), read once at start: the Secret
 * never changes for the Pod (its name and uid derive it), the kubelet mounts it before the container
 * starts, and the value is needed from the start among the secrets kept from logs.
 */
export function readEgressPassword(file: string): string {
  const text = readFileSync(file, 'utf8').replace(/\n$/, '');
  if (!EGRESS_PASSWORD.test(text)) throw new Error(`${file} does not hold an egress password`);
  return text;
}
