// The README's quick start extraction (test/support/quickstart.ts): exactly the marked blocks.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { quickstartBlocks, runBlock } from '../support/quickstart.ts';

const README = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8');
const fence = '```';

describe('the quick start blocks', () => {
  it('are the sh blocks between the markers, as written, and nothing around them', () => {
    const text = [
      `${fence}sh\nmake release\n${fence}`,
      '<!-- quickstart -->',
      `${fence}sh\nkubectl create namespace a \\\n  --dry-run=client\n${fence}`,
      'words between',
      `${fence}sh\nhelm install x "$Y"\n${fence}`,
      '<!-- /quickstart -->',
      `${fence}sh\nrm -rf /\n${fence}`,
    ].join('\n');
    expect(quickstartBlocks(text)).toEqual([
      'kubectl create namespace a \\\n  --dry-run=client\n',
      'helm install x "$Y"\n',
    ]);
  });

  it('refuse a missing or doubled section and a block in another language', () => {
    expect(() => quickstartBlocks('no markers')).toThrow(/no <!-- quickstart -->/);
    const one = `<!-- quickstart -->\n${fence}sh\ntrue\n${fence}\n<!-- /quickstart -->\n`;
    expect(() => quickstartBlocks(one + one)).toThrow(/more than one/);
    expect(() => quickstartBlocks(one.replace(`${fence}sh`, `${fence}bash`))).toThrow(/not ```sh/);
  });

  it('in the README: the namespaces and Secrets, then helm install from the OCI chart with the example values', () => {
    const blocks = quickstartBlocks(README);
    expect(blocks.join('\n')).toMatch(/kubectl create secret generic tether-twilio[\s\S]*TWILIO_AUTH_TOKEN=/);
    expect(blocks.join('\n')).toMatch(/kubectl create secret generic tether-runner --namespace tether-runners/);
    expect(blocks.at(-1)).toMatch(
      /^helm install tether "oci:\/\/\$REGISTRY\/tether"[\s\S]*docs\/examples\/values-cloud\.yaml/,
    );
  });

  it('fail the run at the first command that fails, naming the block and its output', async () => {
    const block = 'echo "$GREETING"\nfalse\necho never\n';
    const error = await runBlock(block, { PATH: process.env.PATH!, GREETING: 'hello' }, '.', 10_000).catch(
      (e: Error) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/exit 1[\s\S]*false[\s\S]*hello/);
    expect((error as Error).message).not.toMatch(/^never$/m);
  });
});
