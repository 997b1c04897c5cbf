// Builds the Session CustomResourceDefinition from the TypeBox schema (one source of truth).
import { createHash } from 'node:crypto';
import type { TSchema } from '@sinclair/typebox';
import { GROUP, KIND, PLURAL, SessionSpec, SessionStatus, VERSION } from './schema.ts';

type Json = { [key: string]: unknown };

/** Turns a TypeBox schema into a structural schema the API server accepts. */
export function toStructural(schema: TSchema | Json): Json {
  const plain = JSON.parse(JSON.stringify(schema)) as Json;
  return clean(plain);
}

function clean(node: Json): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$id') continue;
    if (key === 'patternProperties') {
      const only = Object.values(value as Json)[0] as Json;
      out.additionalProperties = clean(only);
    } else if (key === 'properties') {
      out.properties = Object.fromEntries(Object.entries(value as Json).map(([k, v]) => [k, clean(v as Json)]));
    } else if (key === 'items' || key === 'additionalProperties') {
      out[key] = typeof value === 'object' && value !== null ? clean(value as Json) : value;
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** `priority` 1: shown only by `kubectl get sessions -o wide`. */
const column = (name: string, jsonPath: string, type: string, description: string, priority: 0 | 1 = 0) => ({
  name,
  type,
  jsonPath,
  description,
  ...(priority ? { priority } : {}),
});

/** `kubectl get sessions`: who, where it stands, what it waits for, how old (100 columns); the rest: -o wide. */
export const PRINTER_COLUMNS = [
  column('Phone', '.status.display.phone', 'string', 'masked phone number'),
  column('Phase', '.status.phase', 'string', 'lifecycle phase'),
  column('Waiting-On', '.status.pending.kind', 'string', 'what the session waits for'),
  column('Age', '.metadata.creationTimestamp', 'date', 'time since the Session was created'),
  column('Prompt', '.status.display.prompt', 'string', 'the command, truncated', 1),
  column('Duration', '.status.display.duration', 'string', 'start to completion', 1),
  column('Cost', '.status.result.costUsd', 'number', 'agent cost in USD', 1),
  column('PR', '.status.result.prUrl', 'string', 'the pull request', 1),
];

/** The annotation holding the schema version: installed CRD and controller must agree on it. */
export const SCHEMA_VERSION_ANNOTATION = `${GROUP}/schema-version`;
export const CRD_NAME = `${PLURAL}.${GROUP}`;

/**
 * The version of the Session schema: a hash of the CRD's spec, so any change to what the API
 * server serves (fields, validation, columns) gives a new one without anyone remembering to bump it.
 */
export function sessionSchemaVersion(): string {
  return schemaVersionOf(sessionCrdSpec());
}

export function schemaVersionOf(crdSpec: object): string {
  return createHash('sha256').update(JSON.stringify(crdSpec)).digest('hex').slice(0, 16);
}

function sessionCrdSpec(): Json {
  return {
    group: GROUP,
    scope: 'Namespaced',
    names: {
      plural: PLURAL,
      singular: 'session',
      kind: KIND,
      listKind: `${KIND}List`,
      shortNames: ['sess'],
      categories: ['tether'],
    },
    versions: [
      {
        name: VERSION,
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: PRINTER_COLUMNS,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            description: 'One command from one phone, run by the coding agent in a runner Pod.',
            required: ['spec'],
            properties: {
              apiVersion: { type: 'string', description: 'tether.dev/v1alpha1' },
              kind: { type: 'string', description: 'Session' },
              // The API server refuses anything but the type here (description included).
              metadata: { type: 'object' },
              spec: toStructural(SessionSpec),
              status: toStructural(SessionStatus),
            },
          },
        },
      },
    ],
  };
}

export function sessionCrd(): Json {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: CRD_NAME, annotations: { [SCHEMA_VERSION_ANNOTATION]: sessionSchemaVersion() } },
    spec: sessionCrdSpec(),
  };
}
