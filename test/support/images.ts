// The project's images in a container engine, for the node tier (test/node): names, the engine
// (scripts/ensure-docker.sh: the running one or the project's private one), and containers that
// only ever use the host's network — nothing here creates a bridge or a private address.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { BUILT_IMAGES } from './config.ts';

export type Component = 'controller' | 'relay' | 'runner';
const root = join(import.meta.dirname, '../..');
export const imageName = (component: Component) => `${BUILT_IMAGES.registry}/tether-${component}:${BUILT_IMAGES.tag}`;

let engine: string | undefined;
/** The engine's DOCKER_HOST (scripts/ensure-docker.sh, asked once). */
export function dockerHost(): string {
  engine ??= execFileSync(join(root, 'scripts/ensure-docker.sh'), { encoding: 'utf8' }).trim();
  return engine;
}

export interface Result {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function docker(args: string[], timeoutMs = 60_000): Result {
  const run = spawnSync('docker', args, {
    encoding: 'utf8',
    timeout: timeoutMs,
    env: { ...process.env, DOCKER_HOST: dockerHost() },
    maxBuffer: 64 << 20,
  });
  if (run.error) throw run.error;
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** Fails with how to build when an image is missing. */
export function requireImage(component: Component): void {
  const found = docker(['image', 'inspect', '--format', '{{.Id}}', imageName(component)]);
  if (found.status !== 0)
    throw new Error(
      `${imageName(component)} is not built: run \`make test-node\` (or make images IMAGE_REGISTRY=… IMAGE_TAG=…)`,
    );
}

export interface RunOptions {
  user?: string;
  env?: Record<string, string>;
  entrypoint?: string;
  /** The chart's readOnlyRootFilesystem, with writable tmpfs folders where a Pod would mount volumes. */
  readOnly?: boolean;
  tmpfs?: string[];
  timeoutMs?: number;
}

/**
 * Runs one container to completion as the chart's securityContext would (no capabilities, no
 * privilege escalation), on the host's network, and removes it whatever happens. Asynchronous, so
 * the test process can serve the container pages on loopback meanwhile.
 */
export async function runContainer(component: Component, command: string[], options: RunOptions = {}): Promise<Result> {
  const name = `tether-node-test-${randomBytes(4).toString('hex')}`;
  const args = [
    'run',
    '--name',
    name,
    '--network',
    'host',
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges',
    ...(options.user ? ['--user', options.user] : []),
    ...(options.readOnly ? ['--read-only'] : []),
    ...(options.tmpfs ?? []).flatMap((dir) => ['--tmpfs', `${dir}:rw,mode=1777`]),
    ...Object.entries(options.env ?? {}).flatMap(([key, value]) => ['--env', `${key}=${value}`]),
    ...(options.entrypoint !== undefined ? ['--entrypoint', options.entrypoint] : []),
    imageName(component),
    ...command,
  ];
  const child = spawn('docker', args, { env: { ...process.env, DOCKER_HOST: dockerHost() } });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => {
    out.stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    out.stderr += chunk.toString();
  });
  const timer = setTimeout(() => docker(['rm', '--force', name]), options.timeoutMs ?? 60_000);
  try {
    const status = await new Promise<number | null>((resolve, reject) =>
      child.once('error', reject).once('close', resolve),
    );
    return { status, ...out };
  } finally {
    clearTimeout(timer);
    docker(['rm', '--force', name]);
  }
}
