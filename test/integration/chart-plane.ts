// A control plane of a test file's own, for chart tests that take over the cluster-scoped Session
// CRD (the suite's shared plane keeps one CRD for every file): kubectl and helm on it, the previous
// release's chart and code checked out of git, and the controller run as a process from either.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { freePort, kubeconfigYaml, type ControlPlane } from '../../local/control-plane/control-plane.ts';
import { helm } from '../unit/chart-render.ts';

const run = promisify(execFile);

/** The release before the CRD moved into the chart's templates (its CRD was in crds/, unannotated). */
export const PREVIOUS_RELEASE = '38efc5a';

export interface Plane {
  kubectl(args: string[]): Promise<string>;
  /** `kubectl … -o json` parsed. */
  json<T>(args: string[]): Promise<T>;
  helm(args: string[]): Promise<string>;
  /** A kubeconfig file authenticating as a ServiceAccount (a TokenRequest token, as its Pod would hold). */
  kubeconfigAs(serviceAccount: string, namespace: string): Promise<string>;
}

export function onPlane(plane: ControlPlane): Plane {
  const kubectl = async (args: string[]) =>
    (
      await run(join(inject('binDir'), 'kubectl'), ['--kubeconfig', plane.kubeconfig, ...args], {
        maxBuffer: 16 * 1024 * 1024,
      })
    ).stdout;
  return {
    kubectl,
    json: async <T>(args: string[]) => JSON.parse(await kubectl([...args, '-o', 'json'])) as T,
    async helm(args) {
      const result = await helm([...args, '--kubeconfig', plane.kubeconfig]);
      if (result.code !== 0) throw new Error(`helm ${args[0]} failed: ${result.stderr.trim()}`);
      return result.stdout;
    },
    async kubeconfigAs(serviceAccount, namespace) {
      const token = (await kubectl(['create', 'token', serviceAccount, '-n', namespace])).trim();
      const file = join(mkdtempSync(join(tmpdir(), 'tether-sa-')), 'kubeconfig');
      writeFileSync(file, kubeconfigYaml(plane.server, plane.pki, { name: serviceAccount, token }), { mode: 0o600 });
      return file;
    },
  };
}

/**
 * The previous release's chart, controller and common code in a temporary folder (`git archive`),
 * run with this checkout's node_modules. Returns the folder: its charts/tether is the chart.
 */
export async function previousRelease(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'tether-previous-'));
  const paths = ['charts/tether', 'controller', 'common', 'package.json'];
  await run('bash', ['-c', `git archive ${PREVIOUS_RELEASE} ${paths.join(' ')} | tar -x -C "$1"`, 'archive', dir]);
  symlinkSync(resolve('node_modules'), join(dir, 'node_modules'));
  return dir;
}

export interface ControllerProcess {
  child: ChildProcess;
  metricsPort: number;
  stderr(): string;
  exited: Promise<number | null>;
  stop(): Promise<number | null>;
}

/** `node <codeDir>/controller/main.ts` with the chart's controller ConfigMap as its environment. */
export async function startControllerProcess(
  codeDir: string,
  env: Record<string, string>,
  kubeconfig: string,
): Promise<ControllerProcess> {
  const metricsPort = await freePort();
  const child = spawn(process.execPath, [join(codeDir, 'controller/main.ts')], {
    env: {
      ...env,
      KUBECONFIG: kubeconfig,
      POD_NAME: `tether-controller-${metricsPort}`,
      TETHER_METRICS_PORT: String(metricsPort),
      TETHER_LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return {
    child,
    metricsPort,
    stderr: () => stderr,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
