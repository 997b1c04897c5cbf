// Writes the Session CRD from the TypeBox definition to crds/ and to the chart's CRD template.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { CRD_OUTPUTS } from '../common/session/crd-yaml.ts';

for (const { path, text } of CRD_OUTPUTS) {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text());
  console.log(`wrote ${path}`);
}
