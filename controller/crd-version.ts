// At start the controller reads the installed Session CRD and refuses to run when its schema
// version is not the one this controller was built with: a controller writing fields the API
// server does not know (or no longer accepts) would lose them or fail on every Session.
import { readFileSync } from 'node:fs';
import type { KubeConnection } from '../common/kube/connection.ts';
import { isForbidden, isNotFound } from '../common/kube/errors.ts';
import { getJson } from '../common/kube/raw.ts';
import { CRD_NAME, SCHEMA_VERSION_ANNOTATION, sessionSchemaVersion } from '../common/session/crd.ts';

const CRD_API_PATH = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${CRD_NAME}`;

/** The Tether release this code is: package.json's version, which is the chart's version and appVersion. */
export const TETHER_VERSION = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** What the controller found: the CRD's annotation, or that there is no such CRD, or that it may not read it. */
export type InstalledCrd =
  { state: 'found'; schemaVersion: string | undefined } | { state: 'missing' } | { state: 'forbidden' };

export async function readInstalledCrd(kube: KubeConnection): Promise<InstalledCrd> {
  try {
    const crd = await getJson<{ metadata: { annotations?: Record<string, string> } }>(kube, CRD_API_PATH);
    return { state: 'found', schemaVersion: crd.metadata.annotations?.[SCHEMA_VERSION_ANNOTATION] };
  } catch (error) {
    if (isNotFound(error)) return { state: 'missing' };
    if (isForbidden(error)) return { state: 'forbidden' };
    throw error;
  }
}

const FIX =
  'Install the CRD of this Tether version: `helm upgrade` with crds.install=true (the default) applies it, ' +
  `or, where you manage the CRD yourself, \`kubectl apply --server-side -f crds/${CRD_NAME}.yaml\` from Tether ` +
  `${TETHER_VERSION} (docs/chart.md, "CRD upgrades").`;

/** Why the controller must not run against this CRD (both versions and the fix, in one message); undefined: it may. */
export function crdVersionProblem(installed: InstalledCrd, own = sessionSchemaVersion()): string | undefined {
  const mine = `this controller (Tether ${TETHER_VERSION}) needs schema version ${own}`;
  switch (installed.state) {
    case 'missing':
      return `the Session CRD ${CRD_NAME} is not installed; ${mine}. ${FIX}`;
    case 'forbidden':
      return (
        `the controller may not read the Session CRD ${CRD_NAME} (forbidden): its ClusterRole needs get on ` +
        `customresourcedefinitions/${CRD_NAME}, as the chart grants; ${mine}.`
      );
    case 'found':
      if (installed.schemaVersion === own) return undefined;
      return (
        `the installed Session CRD ${CRD_NAME} has schema version ` +
        `${installed.schemaVersion ?? `none (no ${SCHEMA_VERSION_ANNOTATION} annotation: an older Tether's CRD)`}, ` +
        `but ${mine}. ${FIX}`
      );
  }
}
