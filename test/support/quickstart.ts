// The README's quick start as a test runs it: the fenced shell blocks between `<!-- quickstart -->`
// and `<!-- /quickstart -->`, each run as written by bash with only the environment given.
import { spawn } from 'node:child_process';

const START = '<!-- quickstart -->';
const END = '<!-- /quickstart -->';

/** The ```sh blocks of the marked section, in order, exactly as written. */
export function quickstartBlocks(markdown: string): string[] {
  const start = markdown.indexOf(START);
  const end = markdown.indexOf(END);
  if (start < 0 || end < start) throw new Error(`no ${START} … ${END} section`);
  if (markdown.indexOf(START, start + 1) >= 0) throw new Error(`more than one ${START} section`);
  const section = markdown.slice(start + START.length, end);
  const blocks = [...section.matchAll(/^```(\S*)\n([\s\S]*?)^```$/gm)];
  if (blocks.length === 0) throw new Error('the quickstart section has no fenced block');
  for (const [, language] of blocks)
    if (language !== 'sh') throw new Error(`a quickstart block is \`\`\`${language}, not \`\`\`sh`);
  return blocks.map(([, , body]) => body!);
}

export interface BlockRun {
  output: string;
  ms: number;
}

/** Runs one block with `bash -euo pipefail`; rejects with the block and its output when a command fails. */
export function runBlock(
  block: string,
  env: Record<string, string>,
  cwd: string,
  timeoutMs: number,
): Promise<BlockRun> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-euxo', 'pipefail', '-c', block], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const keep = (chunk: Buffer) => (output += chunk.toString());
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve({ output, ms: Date.now() - started });
      reject(
        new Error(
          `the README's quickstart block failed (${signal ?? `exit ${code}`}):\n${block}\n--- output:\n${output}`,
        ),
      );
    });
  });
}
