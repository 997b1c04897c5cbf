// The `script` agent adapter: runs script-child.ts as its own process group and turns its
// output into the common event model. Malformed output is agent text, never a crash.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { onLines } from './lines.ts';
import { killGroup, trackGroup } from './process-group.ts';
import { MARK } from './script-protocol.ts';
import type { Agent, AgentHost, AgentResult, AgentRunOptions, ToolDecision } from './types.ts';

const CHILD = fileURLToPath(new URL('./script-child.ts', import.meta.url));

interface ChildMessage { t?: unknown; id?: unknown; tool?: unknown; input?: unknown; ok?: unknown; summary?: unknown; message?: unknown }

export class ScriptAgent implements Agent {
  readonly name = 'script' as const;
  private readonly env: Record<string, string>;
  private readonly log: Logger;

  constructor(env: Record<string, string>, log: Logger) {
    this.env = env;
    this.log = log;
  }

  async run(options: AgentRunOptions, host: AgentHost): Promise<AgentResult> {
    const nonce = randomBytes(8).toString('hex');
    const prefix = `${MARK}${nonce} `;
    const child = spawn(process.execPath, [CHILD], { cwd: options.cwd, env: this.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    this.log.info({ pid: child.pid, agent: 'script' }, 'agent started');
    trackGroup(child);
    const stop = () => void killGroup(child);
    options.signal.addEventListener('abort', stop, { once: true });
    child.stdin.on('error', () => undefined); // EPIPE when the child is gone: its exit code tells the story
    const reply = (message: object) => child.stdin.writable && child.stdin.write(`${JSON.stringify(message)}\n`);
    reply({ nonce, prompt: options.prompt, cwd: options.cwd, mode: options.mode, resume: options.resume });

    let result: { ok: boolean; summary?: string; message?: string } | undefined;
    let sessionId: string | undefined;
    const requests: Promise<void>[] = [];
    const handle = (line: string) => {
      if (!line.startsWith(prefix)) return host.event({ type: 'text', text: line });
      let message: ChildMessage;
      try {
        message = JSON.parse(line.slice(prefix.length)) as ChildMessage;
      } catch {
        return host.event({ type: 'text', text: line.slice(prefix.length) });
      }
      if (message.t === 'session' && typeof message.id === 'string') {
        sessionId = message.id;
        host.event({ type: 'session', id: message.id });
      } else if (message.t === 'result') {
        result = { ok: message.ok === true, summary: str(message.summary), message: str(message.message) };
      } else if (message.t === 'tool' && typeof message.id === 'string' && typeof message.tool === 'string') {
        const input = (message.input && typeof message.input === 'object' ? message.input : {}) as Record<string, unknown>;
        const answered = this.tool(host, { id: message.id, tool: message.tool, input }, options.signal).then((r) => void reply(r));
        answered.catch(() => undefined); // examined after the child exits (allSettled below)
        requests.push(answered);
      }
    };
    const stderr: string[] = [];
    const exited = new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] : 0))));
    await Promise.all([
      onLines(child.stdout, handle),
      onLines(child.stderr, (line) => {
        stderr.push(line);
        if (stderr.length > 20) stderr.shift();
      }),
    ]);
    const exitCode = await exited;
    options.signal.removeEventListener('abort', stop);
    // A request cut short by a stop (Stopped, SessionFinished) ends with the agent; anything else is a bug.
    const failure = (await Promise.allSettled(requests)).find((r) => r.status === 'rejected' && !options.signal.aborted);
    if (failure?.status === 'rejected') throw failure.reason;
    if (stderr.length) this.log.info({ stderr: stderr.join('\n').slice(-2000) }, 'agent stderr');
    const ok = exitCode === 0 && result?.ok !== false;
    return {
      ok,
      exitCode,
      summary: result?.summary,
      message: ok ? undefined : result?.message ?? `the scripted agent exited with code ${exitCode}`,
      sessionId,
      costUsd: 0,
      tokens: { input: 0, output: 0 },
    };
  }

  private async tool(host: AgentHost, request: { id: string; tool: string; input: Record<string, unknown> }, signal: AbortSignal) {
    const decision: ToolDecision = await host.canUseTool(request, signal);
    if (decision.behavior === 'deny') return { id: request.id, behavior: 'deny', message: decision.message };
    host.event({ type: 'tool_use', tool: request.tool, input: { ...request.input, ...decision.updatedInput } });
    const own = host.tools[request.tool];
    // A failing runner tool is the agent's tool error (as an MCP tool result would be), not a crash.
    const output = own
      ? await own({ ...request.input, ...decision.updatedInput }).catch((error: unknown) => `${request.tool} failed: ${error instanceof Error ? error.message : String(error)}`)
      : undefined;
    return { id: request.id, behavior: 'allow', updatedInput: decision.updatedInput, output };
  }
}

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
