// Whether a runner Pod found under the name the controller is about to use is one it built: the same
// containers running the same programs with the same environment and mounts, and the same volumes. Only
// such a Pod is adopted and given the Pod's own Secrets (the egress credential, the GitHub token): a Pod
// made ahead of the controller under that name (the replacement's name is known in advance) with a
// command of its own would otherwise get them. Pure.
import type { V1Container, V1EnvVar, V1Pod, V1Volume } from '@kubernetes/client-node';

/** An env var as the API server stores it (it defaults a field reference's apiVersion to v1). */
const storedEnv = (env: V1EnvVar[] | undefined) =>
  (env ?? []).map((e) =>
    e.valueFrom?.fieldRef
      ? { ...e, valueFrom: { ...e.valueFrom, fieldRef: { apiVersion: 'v1', ...e.valueFrom.fieldRef } } }
      : e,
  );

/** What runs, from what, with what: the fields a Pod's maker chooses and the API server keeps as given. */
const program = (c: V1Container) => ({
  name: c.name,
  image: c.image,
  command: c.command ?? [],
  args: c.args ?? [],
  workingDir: c.workingDir ?? '',
  env: storedEnv(c.env),
  envFrom: c.envFrom ?? [],
  mounts: (c.volumeMounts ?? []).map((m) => [m.name, m.mountPath, m.subPath ?? '', Boolean(m.readOnly)]),
});

/** A volume by name and what it is made from (defaults such as modes left aside). */
const source = (v: V1Volume) => ({
  name: v.name,
  secret: v.secret?.secretName,
  claim: v.persistentVolumeClaim?.claimName,
  emptyDir: Boolean(v.emptyDir),
  projected: (v.projected?.sources ?? []).map((s) => s.serviceAccountToken?.audience ?? Object.keys(s).join(',')),
  other: Object.keys(v).filter(
    (k) => !['name', 'secret', 'persistentVolumeClaim', 'emptyDir', 'projected'].includes(k),
  ),
});

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** How the Pod differs from the one the controller builds, or undefined when it is that Pod. */
export function differenceFromBuilt(actual: V1Pod, built: V1Pod): string | undefined {
  const [a, b] = [actual.spec, built.spec];
  if (!a || !b) return 'it has no spec';
  if (a.ephemeralContainers?.length) return 'it has ephemeral containers';
  for (const kind of ['initContainers', 'containers'] as const) {
    const [mine, theirs] = [(b[kind] ?? []).map(program), (a[kind] ?? []).map(program)];
    if (
      !same(
        mine.map((c) => c.name),
        theirs.map((c) => c.name),
      )
    )
      return `its ${kind} are not the runner's`;
    const other = mine.find((c, i) => !same(c, theirs[i]));
    if (other) return `its ${other.name} container runs another program or environment`;
  }
  if (!same((b.volumes ?? []).map(source), (a.volumes ?? []).map(source))) return 'its volumes are not the runner’s';
  if (a.serviceAccountName !== b.serviceAccountName) return 'it runs as another ServiceAccount';
  return undefined;
}
