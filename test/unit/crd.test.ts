import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CRD_PATH, sessionCrdYaml } from '../../common/session/crd-yaml.ts';
import { sessionCrd } from '../../common/session/crd.ts';

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

  it('declares the printer columns kubectl shows', () => {
    const version = (sessionCrd() as { spec: { versions: { additionalPrinterColumns: { name: string }[] }[] } }).spec
      .versions[0]!;
    expect(version.additionalPrinterColumns.map((c) => c.name)).toEqual([
      'Phone',
      'Phase',
      'Waiting-On',
      'Prompt',
      'Age',
      'Duration',
      'Cost',
      'PR',
    ]);
  });
});
