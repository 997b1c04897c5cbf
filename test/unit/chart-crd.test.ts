// The chart renders the generated Session CRD from templates/ (crds.install, crds.keep), and the
// version is one fact: Chart.yaml's version = appVersion = package.json's, the image tags default
// to it, and the CRD carries the schema version the controller checks at start.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CRD_OUTPUTS, CRD_PATH, sessionCrdYaml } from '../../common/session/crd-yaml.ts';
import { CRD_NAME, SCHEMA_VERSION_ANNOTATION, sessionSchemaVersion } from '../../common/session/crd.ts';
import { VERSION } from '../../common/session/schema.ts';
import { TETHER_VERSION } from '../../controller/crd-version.ts';
import {
  CHART_DIR,
  HELM_SETUP_TIMEOUT,
  find,
  helm,
  helmBin,
  podTemplate,
  render,
  type KubeObject,
} from './chart-render.ts';

beforeAll(() => void helmBin(), HELM_SETUP_TIMEOUT);

const KEEP = 'helm.sh/resource-policy';
const chartCrd = (objects: KubeObject[]) => find(objects, 'CustomResourceDefinition', CRD_NAME);

describe('the chart renders the generated Session CRD', () => {
  it('npm run crd wrote every output from the schema (crds/ and the chart template)', () => {
    expect(CRD_OUTPUTS.map((o) => o.path)).toContain(CRD_PATH);
    for (const { path, text } of CRD_OUTPUTS)
      expect(readFileSync(path, 'utf8'), `${path} is stale: run npm run crd`).toBe(text());
  });

  it("by default: exactly crds/' CRD plus the release's labels, its schema version, kept on uninstall", async () => {
    const crd = chartCrd(await render({}, { release: 'tether', namespace: 'agents' }));
    const { labels, annotations } = crd.metadata;
    expect(annotations).toEqual({ [SCHEMA_VERSION_ANNOTATION]: sessionSchemaVersion(), [KEEP]: 'keep' });
    expect(labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'Helm',
      'app.kubernetes.io/instance': 'tether',
      'app.kubernetes.io/version': TETHER_VERSION,
    });
    const plain = parse(sessionCrdYaml()) as KubeObject;
    expect({
      ...crd,
      metadata: { ...crd.metadata, labels: undefined, annotations: { ...annotations, [KEEP]: 'x' } },
    }).toEqual({
      ...plain,
      metadata: { ...plain.metadata, labels: undefined, annotations: { ...plain.metadata.annotations, [KEEP]: 'x' } },
    });
  });

  it('crds.keep=false lets uninstall delete it; crds.install=false leaves it out', async () => {
    const unkept = chartCrd(await render({ crds: { keep: false } }));
    expect(unkept.metadata.annotations).toEqual({ [SCHEMA_VERSION_ANNOTATION]: sessionSchemaVersion() });
    const objects = await render({ crds: { install: false } });
    expect(objects.filter((o) => o.kind === 'CustomResourceDefinition')).toEqual([]);
    expect(objects.length).toBeGreaterThan(10);
  });

  it('the packaged chart has the CRD template and no crds/ folder (Helm would install that copy first)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tether-package-'));
    try {
      const result = await helm(['package', CHART_DIR, '--destination', dir]);
      expect(result.code, result.stderr).toBe(0);
      const archive = join(
        dir,
        readdirSync(dir).find((f) => f.endsWith('.tgz'))!,
      );
      const files = execFileSync('tar', ['-tzf', archive], { encoding: 'utf8' }).split('\n');
      expect(files).toContain('tether/templates/crds/sessions.tether.dev.yaml');
      expect(files.filter((f) => f.startsWith('tether/crds/'))).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the controller may get that one CRD, by name, and nothing else cluster-wide', async () => {
    const objects = await render({}, { release: 'tether', namespace: 'agents' });
    const role = find(objects, 'ClusterRole', 'agents-tether-controller') as unknown as { rules: unknown[] };
    expect(role.rules).toEqual([
      {
        apiGroups: ['apiextensions.k8s.io'],
        resources: ['customresourcedefinitions'],
        resourceNames: [CRD_NAME],
        verbs: ['get'],
      },
    ]);
    const binding = find(objects, 'ClusterRoleBinding', 'agents-tether-controller') as unknown as {
      roleRef: { name: string };
      subjects: unknown[];
    };
    expect(binding.roleRef.name).toBe('agents-tether-controller');
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'tether-controller', namespace: 'agents' }]);
  });
});

describe('the version is one fact', () => {
  const chart = parse(readFileSync(`${CHART_DIR}/Chart.yaml`, 'utf8')) as {
    version: string;
    appVersion: string;
    annotations: Record<string, string>;
  };

  it("Chart.yaml's version is its appVersion and package.json's version (which the controller reports)", () => {
    expect(chart.appVersion).toBe(chart.version);
    expect(TETHER_VERSION).toBe(chart.version);
    expect(chart.annotations['tether.dev/crd-version']).toBe(VERSION);
  });

  it('every image tag defaults to it', async () => {
    const values = parse(readFileSync(`${CHART_DIR}/values.yaml`, 'utf8')) as { image: { tag: string } };
    expect(values.image.tag).toBe('');
    const objects = await render({});
    const images = ['controller', 'relay'].map((c) => podTemplate(find(objects, 'Deployment', c)).spec.containers[0]);
    for (const container of images)
      expect((container as unknown as { image: string }).image).toMatch(new RegExp(`:${chart.version}$`));
    const controllerEnv = find(objects, 'ConfigMap', 'controller') as unknown as { data: Record<string, string> };
    expect(controllerEnv.data.TETHER_RUNNER_IMAGE).toMatch(new RegExp(`/tether-runner:${chart.version}$`));
  });
});
