// The scripted agent's own process (spawned by script.ts in its own process group). Protocol:
// one JSON init line on stdin; requests to the runner are lines `<MARK><nonce> <json>` on stdout;
// decisions come back as JSON lines on stdin. Anything else on stdout is agent output.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { describeScenario, parseScenario, type Step } from './script-scenario.ts';

import { MARK } from './script-protocol.ts';

interface Init { nonce: string; prompt: string; cwd: string; mode: 'run' | 'plan'; resume?: string }
interface Reply { id: string; behavior: 'allow' | 'deny'; updatedInput?: Record<string, unknown>; message?: string; output?: string }

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const next = async (): Promise<string> => {
  const { value, done } = await lines.next();
  if (done) process.exit(0); // the runner went away
  return value as string;
};

const init = JSON.parse(await next()) as Init;
const send = (message: object) => process.stdout.write(`${MARK}${init.nonce} ${JSON.stringify(message)}\n`);
const say = (text: string): void => {
  process.stdout.write(`${text}\n`);
};
let counter = 0;

async function ask(tool: string, input: Record<string, unknown>): Promise<Reply> {
  const id = `script-${++counter}`;
  send({ t: 'tool', id, tool, input });
  for (;;) {
    const reply = JSON.parse(await next()) as Reply;
    if (reply.id === id) return reply;
  }
}

function runShell(command: string): Promise<number> {
  return new Promise((done) => {
    const child = spawn('sh', ['-c', command], { cwd: init.cwd, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('exit', (code) => done(code ?? 1));
    child.on('error', () => done(127));
  });
}

async function step(s: Step, state: { summary: string }): Promise<void> {
  switch (s.kind) {
    case 'progress':
      say(`::progress:: ${s.text}`);
      return;
    case 'raw':
      say(s.text);
      return;
    case 'sleep':
      await new Promise((r) => setTimeout(r, s.ms));
      return;
    case 'say':
      state.summary = s.text;
      say(s.text);
      return;
    case 'fail':
      send({ t: 'result', ok: false, message: s.message });
      process.exit(1);
      return;
    case 'write': {
      const reply = await ask('Write', { file_path: resolve(init.cwd, s.path), content: s.content });
      if (reply.behavior === 'deny') return say(`Write to ${s.path} denied: ${reply.message ?? ''}`);
      const input = { file_path: resolve(init.cwd, s.path), content: s.content, ...reply.updatedInput };
      await mkdir(dirname(String(input.file_path)), { recursive: true });
      await writeFile(String(input.file_path), String(input.content));
      return;
    }
    case 'ask': {
      const question = { question: s.question, header: 'Question', multiSelect: false, options: s.options.map((label) => ({ label })) };
      const reply = await ask('AskUserQuestion', { questions: [question] });
      if (reply.behavior === 'deny') return say(`No answer to "${s.question}": ${reply.message ?? ''}`);
      const answers = (reply.updatedInput?.answers ?? {}) as Record<string, string>;
      state.summary = `${s.question} → ${answers[s.question] ?? '(no answer)'}`;
      say(state.summary);
      return;
    }
    case 'tool': {
      const reply = await ask(s.tool, s.input);
      if (reply.behavior === 'deny') return say(`${s.tool} denied: ${reply.message ?? ''}`);
      const input = { ...s.input, ...reply.updatedInput };
      if (reply.output !== undefined) return say(reply.output);
      if (s.tool === 'Bash' && typeof input.command === 'string') {
        const code = await runShell(input.command);
        say(`${s.tool} exited ${code}`);
      }
      return;
    }
  }
}

// A resumed conversation keeps its id, as Claude Code's --resume does.
send({ t: 'session', id: init.resume ?? `script-${randomUUID()}` });
const steps = parseScenario(init.prompt);
if (init.mode === 'plan') {
  const reply = await ask('ExitPlanMode', { plan: describeScenario(steps) });
  if (reply.behavior === 'deny') {
    send({ t: 'result', ok: true, summary: `Plan not approved: ${reply.message ?? ''}` });
    process.exit(0);
  }
}
const state = { summary: '' };
for (const s of steps) await step(s, state);
send({ t: 'result', ok: true, ...(state.summary ? { summary: state.summary } : {}) });
process.exit(0);
