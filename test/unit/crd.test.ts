import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CRD_PATH, sessionCrdYaml } from '../../common/session/crd-yaml.ts';
import {
  PRINTER_COLUMNS,
  SCHEMA_VERSION_ANNOTATION,
  schemaVersionOf,
  sessionCrd,
  sessionSchemaVersion,
} from '../../common/session/crd.ts';
import { maskPhone } from '../../common/session/display.ts';
import { sessionName } from '../../common/session/names.ts';
import { PENDING_KINDS, PHASES } from '../../common/session/schema.ts';

type Node = {
  description?: string;
  properties?: Record<string, Node>;
  items?: Node;
  additionalProperties?: Node | boolean;
};
interface Crd {
  metadata: { annotations: Record<string, string> };
  spec: { versions: { schema: { openAPIV3Schema: Node } }[] };
}
const crd = () => sessionCrd() as unknown as Crd;

/** The paths of every field (a property, at any depth, through arrays and maps) without a description. */
function undescribed(node: Node, path: string): string[] {
  const own = node.description?.trim() ? [] : [path];
  const fields = Object.entries(node.properties ?? {}).flatMap(([key, child]) => undescribed(child, `${path}.${key}`));
  // An array's or a map's element is no field of its own (kubectl explain shows the array's text); its fields are.
  const inner = [node.items, typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined]
    .filter((n): n is Node => n !== undefined)
    .flatMap((n) => undescribed(n, path).filter((p) => p !== path));
  return [...own, ...fields, ...inner];
}

describe('Session CRD', () => {
  it('committed YAML matches the TypeBox source (run `npm run crd` after changing the schema)', () => {
    expect(readFileSync(CRD_PATH, 'utf8')).toBe(sessionCrdYaml());
  });

  it('is structural: no patternProperties, $id or additionalProperties:false anywhere', () => {
    const text = JSON.stringify(sessionCrd());
    expect(text).not.toContain('patternProperties');
    expect(text).not.toContain('"$id"');
    expect(text).not.toContain('"additionalProperties":false');
  });

  it('describes every field, for kubectl explain', () => {
    const root = crd().spec.versions[0]!.schema.openAPIV3Schema;
    expect(Object.keys(root.properties!.spec!.properties!).length).toBeGreaterThan(10);
    // metadata is the standard ObjectMeta: the API server refuses a CRD that says anything about it but its type.
    expect(undescribed(root, 'session')).toEqual(['session.metadata']);
    expect(root.properties!.metadata).toEqual({ type: 'object' });
  });

  it('finds a field without a description at any depth (the check is live)', () => {
    const root: Node = {
      description: 'r',
      properties: {
        list: { description: 'l', items: { properties: { bare: {} } } },
        map: { description: 'm', additionalProperties: { properties: { x: { description: 'x' }, y: {} } } },
      },
    };
    expect(undescribed(root, 's')).toEqual(['s.list.bare', 's.map.y']);
  });

  it('shows who, phase, what it waits for and age by default; the rest with -o wide', () => {
    const wide = PRINTER_COLUMNS.filter((c) => 'priority' in c && c.priority === 1).map((c) => c.name);
    const narrow = PRINTER_COLUMNS.filter((c) => !('priority' in c)).map((c) => c.name);
    expect(narrow).toEqual(['Phone', 'Phase', 'Waiting-On', 'Age']);
    expect(wide).toEqual(['Prompt', 'Duration', 'Cost', 'PR']);
    for (const column of PRINTER_COLUMNS) expect(column.description, column.name).toBeTruthy();
  });

  it('kubectl get sessions fits 100 columns with the widest values', () => {
    const longest = (values: readonly string[]) => Math.max(...values.map((v) => v.length));
    const widths: Record<string, number> = {
      NAME: sessionName('+14155550123').length,
      PHONE: maskPhone('+861234567890123').length,
      PHASE: longest(PHASES),
      'WAITING-ON': longest(PENDING_KINDS),
      AGE: '365d'.length,
    };
    const shown = ['NAME', ...PRINTER_COLUMNS.filter((c) => !('priority' in c)).map((c) => c.name.toUpperCase())];
    expect(shown).toEqual(Object.keys(widths));
    // kubectl's table: each column as wide as its header or widest value, three spaces between.
    const line = shown.reduce((sum, h) => sum + Math.max(h.length, widths[h]!), 0) + 3 * (shown.length - 1);
    expect(line).toBeLessThanOrEqual(100);
  });

  it('carries its schema version, a hash of its spec that changes with any change to it', () => {
    const version = crd().metadata.annotations[SCHEMA_VERSION_ANNOTATION];
    expect(version).toBe(sessionSchemaVersion());
    expect(version).toMatch(/^[0-9a-f]{16}$/);
    const spec = sessionCrd().spec as { versions: { additionalPrinterColumns: unknown[] }[] };
    expect(schemaVersionOf(spec)).toBe(version);
    const changed = structuredClone(spec);
    changed.versions[0]!.additionalPrinterColumns.pop();
    expect(schemaVersionOf(changed)).not.toBe(version);
  });
});
