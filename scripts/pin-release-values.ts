// Pins a release into a copy of the chart's values.yaml, keeping its comments:
//   node scripts/pin-release-values.ts VALUES_FILE REGISTRY TAG component=sha256:… …
// sets image.registry, image.tag and image.digests.<component> (scripts/release.sh).
import { readFileSync, writeFileSync } from 'node:fs';
import { parseDocument } from 'yaml';

const DIGEST = /^sha256:[0-9a-f]{64}$/;
const COMPONENTS = new Set(['controller', 'relay', 'runner']);

function parsePins(args: string[]): Array<[string, string]> {
  return args.map((arg) => {
    const [component, digest] = arg.split('=');
    if (!component || !COMPONENTS.has(component) || !digest || !DIGEST.test(digest))
      throw new Error(`expected component=sha256:<64 hex> (controller, relay, runner), got '${arg}'`);
    return [component, digest];
  });
}

const [file, registry, tag, ...rest] = process.argv.slice(2);
if (!file || !registry || !tag || rest.length === 0)
  throw new Error('usage: pin-release-values.ts VALUES_FILE REGISTRY TAG component=sha256:… …');
const doc = parseDocument(readFileSync(file, 'utf8'));
doc.setIn(['image', 'registry'], registry);
doc.setIn(['image', 'tag'], tag);
for (const [component, digest] of parsePins(rest)) doc.setIn(['image', 'digests', component], digest);
writeFileSync(file, doc.toString());
