// Builds the Session CustomResourceDefinition from the TypeBox schema (one source of truth).
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

const column = (name: string, jsonPath: string, type = 'string', description?: string) => ({
  name,
  type,
  jsonPath,
  ...(description ? { description } : {}),
});

export function sessionCrd(): Json {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${PLURAL}.${GROUP}` },
    spec: {
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
          additionalPrinterColumns: [
            column('Phone', '.status.display.phone', 'string', 'masked phone number'),
            column('Phase', '.status.phase'),
            column('Waiting-On', '.status.pending.kind', 'string', 'what the session waits for'),
            column('Prompt', '.status.display.prompt', 'string', 'the command, truncated'),
            column('Age', '.metadata.creationTimestamp', 'date'),
            column('Duration', '.status.display.duration'),
            column('Cost', '.status.result.costUsd', 'number', 'agent cost in USD'),
            column('PR', '.status.result.prUrl'),
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: 'One command from one phone, run by the coding agent in a runner Pod.',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: toStructural(SessionSpec),
                status: toStructural(SessionStatus),
              },
            },
          },
        },
      ],
    },
  };
}
