// Writes crds/sessions.tether.dev.yaml from the TypeBox definition.
import { writeFileSync } from 'node:fs';
import { CRD_PATH, sessionCrdYaml } from '../common/session/crd-yaml.ts';

writeFileSync(CRD_PATH, sessionCrdYaml());
console.log(`wrote ${CRD_PATH}`);
