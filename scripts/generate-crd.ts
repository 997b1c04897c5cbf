// Writes the Session CRD from the TypeBox definition to crds/ and to the chart's crds/.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { CRD_OUTPUTS, sessionCrdYaml } from '../common/session/crd-yaml.ts';

const yaml = sessionCrdYaml();
for (const path of CRD_OUTPUTS) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, yaml);
  console.log(`wrote ${path}`);
}
