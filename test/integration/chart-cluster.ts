// Helpers for the chart tests on the run's real control plane: kubectl with exit codes and
// warnings, namespaces under Pod Security `restricted`, helm install with the admin kubeconfig.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { inject } from 'vitest';
import { stringify } from 'yaml';
import { sessionName, workspaceName } from '../../common/session/names.ts';
import type { Session } from '../../common/session/schema.ts';
import { createNamespace } from '../support/cluster.ts';
import { CHART_DIR, helm, withValueArgs, type HelmResult } from '../unit/chart-render.ts';
import { testPhoneHash } from '../support/phone-hash.ts';

const run = promisify(execFile);

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** kubectl against the test apiserver; a non-zero exit is returned, not thrown. */
export async function kubectlResult(args: string[]): Promise<Result> {
  try {
    const { stdout, stderr } = await run(
      join(inject('binDir'), 'kubectl'),
      ['--kubeconfig', inject('kubeconfig'), ...args],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? String(error) };
  }
}

/** kubectl that must succeed; fails with kubectl's own message otherwise. */
export async function kubectlOk(args: string[]): Promise<Result> {
  const result = await kubectlResult(args);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${result.code}): ${result.stderr.trim()}`);
  return result;
}

/**
 * The controller's environment as an installed release gives it: its ConfigMap, the phone hash key
 * it reads from the relay's (chart-generated) Secret, and with egress on the egress Secret's key.
 */
export async function installedControllerEnv(namespace: string, release = 'tether'): Promise<Record<string, string>> {
  const read = async (kind: string, name: string) =>
    (
      JSON.parse((await kubectlOk(['get', kind, name, '-n', namespace, '-o', 'json'])).stdout) as {
        data: Record<string, string>;
      }
    ).data;
  const text = (base64: string) => Buffer.from(base64, 'base64').toString();
  const config = await read('configmap', `${release}-controller`);
  const egress: Record<string, string> = config.TETHER_EGRESS_URL
    ? { TETHER_EGRESS_KEY: text((await read('secret', `${release}-egress`)).TETHER_EGRESS_KEY!) }
    : {};
  const secret = await read('secret', `${release}-relay`);
  return { ...config, TETHER_PHONE_HASH_KEY: text(secret.TETHER_PHONE_HASH_KEY!), ...egress };
}

/** Server-side apply of a manifest as a dry run with strict field validation: what the API server would refuse. */
export async function serverDryRun(file: string): Promise<Result> {
  return kubectlResult([
    'apply',
    '--server-side',
    '--force-conflicts',
    '--dry-run=server',
    '--validate=strict',
    '--field-manager=chart-test',
    '-f',
    file,
  ]);
}

/** Writes objects to a temporary YAML file for `kubectl -f`. */
export function manifestFile(objects: object[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'tether-chart-')), 'manifest.yaml');
  writeFileSync(file, objects.map((o) => stringify(o, { lineWidth: 0 })).join('---\n'));
  return file;
}

/** A fresh namespace where the API server enforces (and warns about) Pod Security `restricted`. */
export async function restrictedNamespace(kc: KubeConfig, prefix: string): Promise<string> {
  const ns = await createNamespace(kc, prefix);
  await enforceRestricted(ns);
  return ns;
}

/** Labels an existing namespace so the API server enforces (and warns about) Pod Security `restricted`. */
export async function enforceRestricted(ns: string): Promise<void> {
  await kubectlOk([
    'label',
    'namespace',
    ns,
    'pod-security.kubernetes.io/enforce=restricted',
    'pod-security.kubernetes.io/enforce-version=latest',
    'pod-security.kubernetes.io/warn=restricted',
    'pod-security.kubernetes.io/warn-version=latest',
  ]);
}

/**
 * `helm install|upgrade` of charts/tether into `namespace` with the admin kubeconfig. The suite's
 * files share one Session CRD (installSessionCrd), so no release takes it over (crds.install=false).
 */
export async function helmRelease(
  verb: 'install' | 'upgrade',
  release: string,
  namespace: string,
  values: object,
): Promise<HelmResult> {
  return withValueArgs({ crds: { install: false }, ...values }, async (valueArgs) => {
    const result = await helm([
      verb,
      release,
      CHART_DIR,
      '--namespace',
      namespace,
      '--kubeconfig',
      inject('kubeconfig'),
      ...valueArgs,
      '--timeout',
      '60s',
    ]);
    if (result.code !== 0) throw new Error(`helm ${verb} failed: ${result.stderr.trim()}`);
    return result;
  });
}

/** Lines of `kubectl auth can-i --list` as "resource [names] verbs…" (verbs sorted). */
export async function permissions(
  serviceAccount: string,
  namespace: string,
  inNamespace = namespace,
): Promise<Set<string>> {
  const { stdout } = await kubectlOk([
    'auth',
    'can-i',
    '--list',
    '--no-headers',
    `--as=system:serviceaccount:${namespace}:${serviceAccount}`,
    '-n',
    inNamespace,
  ]);
  const lines = stdout
    .split('\n')
    .filter((l) => l.trim())
    .map((line) => {
      const match = /^(\S*)\s+\[(.*?)\]\s+\[(.*?)\]\s+\[(.*?)\]\s*$/.exec(line);
      if (!match) throw new Error(`unexpected can-i line: ${line}`);
      const [, resource, urls, names, verbs] = match;
      return `${resource || urls} [${names}] ${verbs!.split(' ').filter(Boolean).sort().join(' ')}`;
    });
  return new Set(lines);
}

/** Permissions beyond what every ServiceAccount has (the namespace's `default` one as baseline). */
export async function extraPermissions(
  serviceAccount: string,
  namespace: string,
  inNamespace = namespace,
): Promise<string[]> {
  const [granted, baseline] = await Promise.all([
    permissions(serviceAccount, namespace, inNamespace),
    permissions('default', namespace, inNamespace),
  ]);
  return [...granted].filter((p) => !baseline.has(p)).sort();
}

/** `kubectl auth can-i` as a ServiceAccount: true for yes, false for no. */
export async function canI(serviceAccount: string, namespace: string, args: string[]): Promise<boolean> {
  const result = await kubectlResult([
    'auth',
    'can-i',
    ...args,
    `--as=system:serviceaccount:${namespace}:${serviceAccount}`,
  ]);
  if (result.code !== 0 && result.stdout.trim() !== 'no') throw new Error(`can-i ${args.join(' ')}: ${result.stderr}`);
  return result.code === 0;
}

/** The cluster-scoped objects a release in `namespaces` made (they outlive the namespace). */
export async function deleteClusterScoped(namespaces: string[]): Promise<void> {
  await kubectlResult([
    'delete',
    'clusterrole,clusterrolebinding',
    ...namespaces.flatMap((n) => [`${n}-tether-relay`, `${n}-tether-controller`]),
    '--ignore-not-found',
  ]);
  const policies = namespaces.flatMap((n) => [
    `${n}-tether-sessions`,
    `${n}-runners-runner-pods`,
    `${n}-tether-egress`,
  ]);
  await kubectlResult([
    'delete',
    'validatingadmissionpolicy,validatingadmissionpolicybinding',
    ...policies,
    '--ignore-not-found',
  ]);
}

/**
 * `kubectl create --dry-run=server` of a Pod as the controller's ServiceAccount: RBAC and admission run, nothing
 * is stored.
 */
export const createPodAsController = (ns: string, runners: string, pod: object) =>
  kubectlResult([
    'create',
    '--dry-run=server',
    `--as=system:serviceaccount:${ns}:tether-controller`,
    '-n',
    runners,
    '-f',
    manifestFile([pod]),
  ]);

/** A Session of `phone` in `namespace` as the controller's builders take it (never stored). */
export const unstoredSession = (phone: string, namespace: string) =>
  ({
    apiVersion: 'tether.dev/v1alpha1',
    kind: 'Session',
    metadata: { name: sessionName(testPhoneHash(phone)), namespace, uid: 'u-1' },
    spec: {
      phone,
      prompt: 'hi',
      repo: { url: 'https://github.com/acme/web.git' },
      workspace: workspaceName(testPhoneHash(phone)),
    },
  }) as Session;
