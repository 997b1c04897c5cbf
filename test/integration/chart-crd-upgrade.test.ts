// The upgrade from the previous chart, on a control plane of this file's own (it takes over the
// cluster-scoped Session CRD): the previous chart installed with helm (its CRD from crds/), its own
// controller making Sessions' runner Pods, workspaces and identities; then `helm upgrade` to this
// chart after the documented adoption lines. The CRD is upgraded, nothing is lost, and this
// controller runs — while it refuses, naming both schema versions, a CRD of another one.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRD_NAME, SCHEMA_VERSION_ANNOTATION, sessionSchemaVersion } from '../../common/session/crd.ts';
import { startControlPlane, type ControlPlane } from '../../local/control-plane/control-plane.ts';
import { eventually } from '../support/eventually.ts';
import { TEST_PHONE_HASH_KEY } from '../support/phone-hash.ts';
import { CHART_DIR, helmBin, TEST_API_SERVER_CIDRS } from '../unit/chart-render.ts';
import { manifestFile } from './chart-cluster.ts';
import { onPlane, previousRelease, startControllerProcess, type ControllerProcess, type Plane } from './chart-plane.ts';

const NS = 'tether';
const RUNNERS = `${NS}-runners`;
const VALUES = [
  '--set',
  'relay.publicUrl=https://tether.example.com',
  '--set-string',
  'relay.allowedNumbers[0]=+14155550123',
  // The test writes Sessions as the relay would, as the plane's admin.
  '--set',
  'sessions.creators.groups[0]=system:masters',
  // Helm's lookup finds no API server addresses on the plane; with egress on the chart then needs them given.
  '--set',
  `networkPolicy.apiServer.cidrs={${TEST_API_SERVER_CIDRS.join(',')}}`,
];
const [TERMINAL_PHONE, ACTIVE_PHONE] = ['+14155550123', '+14155550124'];

let plane: ControlPlane;
let k: Plane;
let previous: string;
const running: ControllerProcess[] = [];

interface Item {
  metadata: { name: string; uid: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  status?: { phase?: string } & Record<string, unknown>;
}
const items = async (args: string[]) => (await k.json<{ items: Item[] }>(['get', ...args])).items;
/** The controller's ConfigMap, and the keys of the relay's and the egress Secrets once the chart made them. */
const controllerEnv = async () => {
  const data = async (kind: string, name: string) =>
    (await k.json<{ data: Record<string, string> }>(['get', kind, name, '-n', NS])).data;
  const text = (base64: string) => Buffer.from(base64, 'base64').toString();
  const key = (await data('secret', 'tether-relay')).TETHER_PHONE_HASH_KEY;
  const config = await data('configmap', 'tether-controller');
  const egressKey = config.TETHER_EGRESS_URL ? (await data('secret', 'tether-egress')).TETHER_EGRESS_KEY : undefined;
  return {
    ...config,
    ...(key ? { TETHER_PHONE_HASH_KEY: text(key) } : {}),
    ...(egressKey ? { TETHER_EGRESS_KEY: text(egressKey) } : {}),
  };
};
const phases = async () =>
  Object.fromEntries((await items(['sessions', '-n', NS])).map((s) => [s.metadata.name, s.status?.phase]));

/** What must survive the upgrade as it was: every object the install and its controller made, by name and uid. */
async function workspaceObjects(): Promise<Record<string, string>> {
  const listed = await Promise.all([
    ...['persistentvolumeclaims', 'serviceaccounts', 'pods'].map(
      async (kind) => [kind, await items([kind, '-n', RUNNERS])] as const,
    ),
    ...['roles', 'rolebindings', 'sessions'].map(async (kind) => [kind, await items([kind, '-n', NS])] as const),
  ]);
  return Object.fromEntries(
    listed.flatMap(([kind, list]) => list.map((o) => [`${kind}/${o.metadata.name}`, o.metadata.uid])),
  );
}

/** The previous code's names.ts and display.ts: names from the number, by its unkeyed hash. */
interface PreviousNames {
  LABEL_PHONE_HASH: string;
  sessionName(phone: string): string;
  workspaceName(phone: string): string;
}
interface PreviousDisplay {
  phoneHash(phone: string): string;
}

/** Creates a Session as the previous relay did, named by the previous code. */
async function createPreviousSession(phone: string): Promise<string> {
  const names = (await import(join(previous, 'common/session/names.ts'))) as PreviousNames;
  const display = (await import(join(previous, 'common/session/display.ts'))) as PreviousDisplay;
  const name = names.sessionName(phone);
  const session = {
    apiVersion: 'tether.dev/v1alpha1',
    kind: 'Session',
    metadata: { name, namespace: NS, labels: { [names.LABEL_PHONE_HASH]: display.phoneHash(phone) } },
    spec: {
      phone,
      prompt: 'script:\nprogress: hello',
      repo: { url: 'https://github.com/acme/web.git' },
      workspace: names.workspaceName(phone),
    },
  };
  await k.kubectl(['create', '-f', manifestFile([session])]);
  return name;
}

/** The adoption lines of docs/chart.md ("Upgrading from a chart that kept the CRD in crds/"), as written. */
function adoptionLines(): string[][] {
  const doc = readFileSync('docs/chart.md', 'utf8');
  const block = /<!-- crd-adoption -->\n```sh\n([\s\S]*?)```/.exec(doc);
  if (!block) throw new Error('docs/chart.md lost its crd-adoption block');
  return block[1]!
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/));
}

beforeAll(async () => {
  helmBin();
  [plane, previous] = await Promise.all([startControlPlane({ controllerManager: false }), previousRelease()]);
  k = onPlane(plane);
}, 900_000);
afterAll(async () => {
  for (const controller of running) await controller.stop();
  await plane?.stop();
  if (previous) rmSync(previous, { recursive: true, force: true });
});

describe('helm upgrade from the previous chart with live Sessions and workspaces', () => {
  let before: Record<string, string>;
  let terminal: string;
  let active: string;

  it('the previous chart and its controller: a finished Session and an active one with their workspaces', async () => {
    await k.helm(['install', 'tether', join(previous, CHART_DIR), '-n', NS, '--create-namespace', ...VALUES]);
    const crd = await k.json<Item>(['get', 'crd', CRD_NAME]);
    expect(crd.metadata.annotations?.[SCHEMA_VERSION_ANNOTATION]).toBeUndefined();
    const kubeconfig = await k.kubeconfigAs('tether-controller', NS);
    const controller = await startControllerProcess(previous, await controllerEnv(), kubeconfig);
    running.push(controller);
    terminal = await createPreviousSession(TERMINAL_PHONE);
    active = await createPreviousSession(ACTIVE_PHONE);
    await eventually(
      async () => expect(await phases()).toEqual({ [terminal]: 'Starting', [active]: 'Starting' }),
      30_000,
      200,
    );
    await k.kubectl(['patch', 'session', terminal, '-n', NS, '--type=merge', '-p', '{"spec":{"cancel":true}}']);
    await eventually(async () => expect((await phases())[terminal]).toBe('Cancelled'), 30_000, 200);
    expect(await controller.stop()).toBe(0);
    before = await workspaceObjects();
    const kinds = new Set(Object.keys(before).map((key) => key.split('/')[0]));
    expect([...kinds].sort()).toEqual([
      'persistentvolumeclaims',
      'pods',
      'rolebindings',
      'roles',
      'serviceaccounts',
      'sessions',
    ]);
    expect(Object.keys(before).filter((key) => key.startsWith('persistentvolumeclaims/'))).toHaveLength(2);
  });

  it("this controller refuses the previous chart's CRD, naming both schema versions and the fix", async () => {
    // The previous chart's Secret holds no phone hash key yet: the upgrade below makes it.
    const env = { ...(await controllerEnv()), TETHER_PHONE_HASH_KEY: TEST_PHONE_HASH_KEY };
    const controller = await startControllerProcess('.', env, plane.kubeconfig);
    running.push(controller);
    expect(await controller.exited).toBe(2);
    expect(controller.stderr()).toContain(
      `refusing to run: the installed Session CRD ${CRD_NAME} has schema version none ` +
        `(no ${SCHEMA_VERSION_ANNOTATION} annotation`,
    );
    expect(controller.stderr()).toContain(`needs schema version ${sessionSchemaVersion()}`);
    expect(controller.stderr()).toMatch(
      /`helm upgrade` with crds\.install=true .* `kubectl apply --server-side -f crds\//,
    );
  });

  it('upgrades with helm after the documented adoption lines: the CRD is upgraded, nothing is lost', async () => {
    for (const [command, ...args] of adoptionLines()) {
      expect(command).toBe('kubectl');
      await k.kubectl(args);
    }
    const sessionsBefore = await items(['sessions', '-n', NS]);
    await k.helm(['upgrade', 'tether', CHART_DIR, '-n', NS, ...VALUES]);
    const crd = await k.json<Item>(['get', 'crd', CRD_NAME]);
    expect(crd.metadata.annotations).toMatchObject({
      [SCHEMA_VERSION_ANNOTATION]: sessionSchemaVersion(),
      'helm.sh/resource-policy': 'keep',
      'meta.helm.sh/release-name': 'tether',
    });
    // Every object as it was; the chart's new egress proxy brings its own Role and RoleBinding.
    expect(await workspaceObjects()).toEqual({
      ...before,
      'roles/tether-egress': expect.any(String),
      'rolebindings/tether-egress': expect.any(String),
    });
    // History as it was: the finished Session's spec and status and the active one's, field for field.
    const kept = (list: Item[]) => list.map((s) => ({ ...s, metadata: s.metadata.uid }));
    expect(kept(await items(['sessions', '-n', NS]))).toEqual(kept(sessionsBefore));
  });

  it('this controller runs on the upgraded install and carries on its Sessions', async () => {
    const kubeconfig = await k.kubeconfigAs('tether-controller', NS);
    const controller = await startControllerProcess('.', await controllerEnv(), kubeconfig);
    running.push(controller);
    await eventually(
      async () => expect((await fetch(`http://127.0.0.1:${controller.metricsPort}/readyz`)).status).toBe(200),
      30_000,
      200,
    );
    await k.kubectl(['patch', 'session', active, '-n', NS, '--type=merge', '-p', '{"spec":{"cancel":true}}']);
    await eventually(
      async () => expect(await phases()).toEqual({ [terminal]: 'Cancelled', [active]: 'Cancelled' }),
      30_000,
      200,
    );
    expect(controller.stderr()).toBe('');
    const after = await workspaceObjects();
    for (const key of Object.keys(before).filter((k) => k.startsWith('persistentvolumeclaims/')))
      expect(after[key], `${key} kept`).toBe(before[key]);
    expect(await controller.stop()).toBe(0);
  });

  it('refuses a CRD with another schema version, naming both and the fix', async () => {
    const other = '0123456789abcdef';
    await k.kubectl(['annotate', 'crd', CRD_NAME, `${SCHEMA_VERSION_ANNOTATION}=${other}`, '--overwrite']);
    const kubeconfig = await k.kubeconfigAs('tether-controller', NS);
    const controller = await startControllerProcess('.', await controllerEnv(), kubeconfig);
    running.push(controller);
    expect(await controller.exited).toBe(2);
    expect(controller.stderr()).toContain(`has schema version ${other}, but this controller`);
    expect(controller.stderr()).toContain(`needs schema version ${sessionSchemaVersion()}`);
  });

  it('helm uninstall keeps the CRD and every Session; installing again takes the kept CRD back', async () => {
    const sessions = Object.keys(await phases()).sort();
    await k.helm(['uninstall', 'tether', '-n', NS]);
    await k.kubectl(['get', 'crd', CRD_NAME]);
    expect(Object.keys(await phases()).sort()).toEqual(sessions);
    // The uninstall left the runner namespace terminating (this plane runs no namespace controller).
    await k.helm(['install', 'tether', CHART_DIR, '-n', NS, ...VALUES, '--set', 'runner.namespace=tether-again']);
    const crd = await k.json<Item>(['get', 'crd', CRD_NAME]);
    expect(crd.metadata.annotations?.[SCHEMA_VERSION_ANNOTATION]).toBe(sessionSchemaVersion());
    expect(Object.keys(await phases()).sort()).toEqual(sessions);
  });
});

describe('a first install of this chart', () => {
  it('creates the CRD with its schema version where there is none, without conflicts', async () => {
    await k.helm(['uninstall', 'tether', '-n', NS]);
    await k.kubectl(['delete', 'crd', CRD_NAME, '--wait']);
    await k.helm(['install', 'fresh', CHART_DIR, '-n', 'fresh', '--create-namespace', ...VALUES]);
    const crd = await k.json<Item>(['get', 'crd', CRD_NAME]);
    expect(crd.metadata.annotations).toMatchObject({
      [SCHEMA_VERSION_ANNOTATION]: sessionSchemaVersion(),
      'meta.helm.sh/release-name': 'fresh',
    });
    await k.helm(['upgrade', 'fresh', CHART_DIR, '-n', 'fresh', ...VALUES]);
  });
});
