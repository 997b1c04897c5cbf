// The local stack's settings: the only reader of process.env under local/. `make dev` and the
// test helpers that start the same stack read their environment through here.
import { join, resolve } from 'node:path';

export const repoRoot = resolve(import.meta.dirname, '..');

/** The host's PATH and HOME, handed to the processes the local stack starts. */
export function hostEnv(): { PATH: string; HOME: string } {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' };
}

const set = (name: string): string | undefined => process.env[name] || undefined;

/** Where the local node agent keeps the images it stages, as root (local/node-agent/image-store.ts). */
export const DEFAULT_IMAGE_DIR = '/var/cache/tether/images';
export const imageStoreDir = (): string => resolve(set('TETHER_IMAGE_DIR') ?? DEFAULT_IMAGE_DIR);
const passThrough = (names: string[]) => Object.fromEntries(names.flatMap((n) => (set(n) ? [[n, set(n)!]] : [])));

export interface DevConfig {
  stateDir: string;
  imageStore: string;
  logLevel: string;
  githubApiUrl?: string;
  repoUrl?: string;
  relayPort: number;
  relayEnv: Record<string, string>;
  runnerSecrets: Record<string, string>;
}

/** `make dev`'s variables; empty ones count as unset. */
export function loadDevConfig(): DevConfig {
  const port = Number(set('TETHER_DEV_PORT') ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`TETHER_DEV_PORT must be a port number, got "${set('TETHER_DEV_PORT')}"`);
  return {
    stateDir: resolve(set('TETHER_STATE_DIR') ?? join(repoRoot, '.tether-state')),
    imageStore: imageStoreDir(),
    logLevel: set('LOG_LEVEL') ?? 'info',
    githubApiUrl: set('GITHUB_API_URL'),
    repoUrl: set('TETHER_REPO_URL'),
    relayPort: port,
    relayEnv: passThrough(['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN', 'TWILIO_WHATSAPP_FROM', 'TWILIO_API_URL', 'ALLOWED_NUMBERS', 'PUBLIC_URL', 'RELAY_BIND_ADDRESS',
      'TETHER_REPOS', 'TETHER_REPO_NAME']),
    runnerSecrets: passThrough(['ANTHROPIC_API_KEY', 'GITHUB_TOKEN']),
  };
}

/** The whole environment, for the control plane's own processes (they inherit it as they would from a shell). */
export const inheritedEnv = (): NodeJS.ProcessEnv => process.env;
