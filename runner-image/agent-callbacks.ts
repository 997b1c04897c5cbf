// The runner's side of the agent interface: permission policy, questions, plans, progress.
import type { Logger } from 'pino';
import { truncate } from '../common/session/display.ts';
import { LIMITS, type Result } from '../common/session/schema.ts';
import type { AgentEvent, AgentHost, AgentResult, ToolDecision, ToolRequest } from './agents/types.ts';
import { decide, type Policy, type Ruling } from './policy.ts';
import { CostMeter } from './model/cost-meter.ts';
import type { ModelSpend } from './model/spend.ts';
import { Deduper, progressLines } from './progress.ts';
import { answersFrom, isApproval, pendingQuestions, type Requests } from './requests.ts';
import type { StatusWriter } from './status.ts';
import { revision } from './plan-revision.ts';

export interface HostDeps {
  status: StatusWriter;
  requests: Requests;
  policy: Policy;
  repoDir: string;
  log: Logger;
  tools: AgentHost['tools'];
  /** Called when a decision ends the session (plan rejected). */
  onFinal: (reason: string) => void;
  /** spec.costPauseUsd: ask "continue?" at each multiple of this spend (unset or 0: never) */
  costPauseUsd?: number;
  /** The model proxy's metering: when given, the only source of spend (Claude Code's reports are ignored). */
  modelSpend?: ModelSpend;
  /** What the run spent before its runner was replaced (status.result.costUsd): counted on, pauses included. */
  spentBefore?: number;
}

export class RunnerHost implements AgentHost {
  private readonly deps: HostDeps;
  private readonly dedupe = new Deduper();
  /** Tools the user answered "allow always" for; never above a deny rule or a guarded ask (policy.ts). */
  private readonly allowedAlways = new Set<string>();
  private readonly meter: CostMeter;
  /** The open cost pause: resolves true on "continue", false on "stop". */
  private pause: Promise<boolean> | undefined;
  readonly tools: AgentHost['tools'];
  agentSessionId: string | undefined;
  lastText = '';
  /** Tool calls made and not yet answered, by id, in the order they were made. */
  private readonly running = new Map<string, { tool: string; input: unknown }>();

  constructor(deps: HostDeps) {
    this.deps = deps;
    this.tools = deps.tools;
    this.meter = new CostMeter(deps.costPauseUsd ?? 0);
    if (deps.spentBefore) {
      this.meter.addSpend(deps.spentBefore);
      // A pause the lost runner reached was answered there (or is adopted by the replacement): the next one is next.
      if (deps.costPauseUsd) this.meter.resume();
    }
    deps.modelSpend?.listen((usd) => {
      this.meter.addSpend(usd);
      this.deps.status.setResult({ costUsd: this.spentUsd });
      if (this.meter.pauseDue) void this.costPause();
    });
  }

  event(event: AgentEvent): void {
    if ((event.type === 'usage' || event.type === 'turn-usage') && this.deps.modelSpend) return;
    if (event.type === 'usage') {
      // The run's spend so far, for the pause and the daily budget.
      if (this.meter.add(event.id, event.model, event.usage)) this.deps.status.setResult({ costUsd: this.spentUsd });
      // Asked at once, not at the next tool call: a response without tool calls must not slip past it.
      if (this.meter.pauseDue) void this.costPause();
      return;
    }
    if (event.type === 'turn-usage') {
      // No pause here: the turn is over; a follow-up turn meets it at its first tool call.
      this.meter.endTurn(event.usage);
      this.deps.status.setResult({ costUsd: this.spentUsd });
      return;
    }
    if (event.type === 'session') {
      if (event.id && event.id !== this.agentSessionId) {
        this.agentSessionId = event.id;
        this.deps.status.setResult({ agentSessionId: event.id.slice(0, 256) });
      }
      return;
    }
    if (event.type === 'tool_use' && event.id) this.running.set(event.id, { tool: event.tool, input: event.input });
    if (event.type === 'tool_done') this.running.delete(event.id);
    if (event.type === 'text' && event.text.trim() && !event.text.includes('::progress::'))
      this.lastText = event.text.trim();
    for (const line of progressLines(event)) {
      if (this.dedupe.accept(line)) this.deps.status.addProgress(line);
    }
  }

  async canUseTool(request: ToolRequest, _signal: AbortSignal): Promise<ToolDecision> {
    const { tool, input } = request;
    const paused = await this.costGate();
    if (paused) return paused;
    if (tool === 'AskUserQuestion') return this.question(input);
    if (tool === 'ExitPlanMode') return this.plan(input);
    const ruling = decide(this.deps.policy, this.deps.repoDir, tool, input, this.allowedAlways);
    this.deps.log.info({ tool, verdict: ruling.verdict, reason: ruling.reason }, 'tool permission');
    if (ruling.verdict === 'allow') return { behavior: 'allow', updatedInput: input };
    if (ruling.verdict === 'deny')
      return {
        behavior: 'deny',
        message: `${tool} is not allowed by this installation's Tether policy (${ruling.reason}).`,
      };
    return this.ask(tool, input, ruling);
  }

  /**
   * Past the spend threshold nothing goes on (every tool call, auto-allowed ones included, waits
   * here) until the phone answers: "continue" lets it through, "stop" ends the run (its changes stay).
   */
  async costGate(): Promise<ToolDecision | undefined> {
    while (this.meter.pauseDue || this.pause) {
      if (!(await this.costPause()))
        return { behavior: 'deny', message: 'The user stopped this run because of its cost.', interrupt: true };
    }
    return undefined;
  }

  /** The agent's result as the Session records it: summary, conversation, spend, tokens, exit code. */
  resultOf(result: AgentResult): Partial<Result> {
    const summary = result.summary?.trim() || this.lastText;
    return {
      ...(summary ? { summary: truncate(summary, LIMITS.textChars) } : {}),
      ...(result.sessionId ? { agentSessionId: result.sessionId.slice(0, 256) } : {}),
      costUsd: this.spentUsd,
      ...(result.tokens ? { tokens: result.tokens } : {}),
      exitCode: result.exitCode,
    };
  }

  /** The latest tool call still running, its input as JSON cut to what the phone is shown (an egress ask names it). */
  runningTool(): { tool: string; input: string } | undefined {
    const last = [...this.running.values()].at(-1);
    if (!last) return undefined;
    return { tool: last.tool.slice(0, 256), input: (JSON.stringify(last.input) ?? '').slice(0, LIMITS.toolInputChars) };
  }

  /** What this run's own model responses cost (Claude Code's total of a resumed conversation includes earlier runs). */
  get spentUsd(): number {
    return roundUsd(this.meter.spentUsd);
  }

  costHeld(): boolean {
    return this.meter.pauseDue || this.pause !== undefined;
  }

  /** Resolves once an open cost pause is answered (at once when none is open). */
  async pauseAnswered(): Promise<void> {
    if (this.pause) await this.pause;
  }

  /** One pause per threshold, however many calls wait on it. */
  private costPause(): Promise<boolean> {
    if (!this.pause) {
      if (this.deps.modelSpend) this.deps.modelSpend.paused = true;
      this.pause = this.askToContinue().finally(() => {
        this.pause = undefined;
        if (this.deps.modelSpend) this.deps.modelSpend.paused = false;
      });
      // Awaited by costGate or pauseAnswered; a run stopped meanwhile rejects it, which is no news.
      this.pause.catch(() => undefined);
    }
    return this.pause;
  }

  private async askToContinue(): Promise<boolean> {
    const { effects } = await this.deps.requests.raise('cost', { costUsd: this.spentUsd });
    if (!effects.includes('ResumeAgent')) {
      this.deps.onFinal('stopped at the cost pause');
      return false;
    }
    this.meter.resume();
    return true;
  }

  /**
   * The whole input goes to the phone, up to LIMITS.toolInputChars; a longer one is shown cut
   * (the phone says how much is missing) and needs an explicit allow: never "allow always".
   */
  private async ask(tool: string, input: Record<string, unknown>, ruling: Ruling): Promise<ToolDecision> {
    const json = JSON.stringify(input);
    const shown = json.slice(0, LIMITS.toolInputChars);
    if (shown.length < json.length)
      this.deps.log.warn(
        { tool, input: json },
        'tool request longer than the phone is shown; asked with the start only',
      );
    const { decision } = await this.deps.requests.raise('tool', { tool, input: shown, inputChars: json.length });
    if (!isApproval(decision))
      return { behavior: 'deny', message: decision.message?.trim() || 'The user denied this tool call.' };
    if (decision.scope === 'session') {
      if (shown.length < json.length)
        this.deps.status.addProgress('"allow always" counted as allow once: the request was too long to show whole');
      else if (!ruling.always)
        this.deps.status.addProgress(`"allow always" counted as allow once: ${ruling.reason} are asked each time`);
      else this.allowedAlways.add(tool);
    }
    return { behavior: 'allow', updatedInput: input };
  }

  private async question(input: Record<string, unknown>): Promise<ToolDecision> {
    const questions = pendingQuestions(input);
    if (questions.length === 0) return { behavior: 'deny', message: 'AskUserQuestion needs at least one question.' };
    const { decision } = await this.deps.requests.raise('question', { questions });
    const answers = answersFrom(decision, questions);
    if (!isApproval(decision) || Object.keys(answers).length === 0) {
      return {
        behavior: 'deny',
        message: decision.message?.trim() || 'The user did not answer. Do not assume an answer.',
      };
    }
    return { behavior: 'allow', updatedInput: { ...input, answers } };
  }

  private async plan(input: Record<string, unknown>): Promise<ToolDecision> {
    const plan = typeof input.plan === 'string' ? input.plan : JSON.stringify(input);
    const { decision, effects } = await this.deps.requests.raise('plan', { summary: truncate(plan, LIMITS.textChars) });
    // Revise: the agent stays in plan mode with the user's words and proposes a new plan (a new request).
    if (decision.action === 'revise' && effects.includes('ResumeAgent'))
      return { behavior: 'deny', message: revision(decision.message) };
    if (!effects.includes('ResumeAgent')) {
      this.deps.onFinal('plan rejected');
      return { behavior: 'deny', message: decision.message?.trim() || 'The user rejected the plan.', interrupt: true };
    }
    return {
      behavior: 'allow',
      updatedInput: input,
      updatedPermissions: [{ type: 'setMode', mode: 'default', destination: 'session' }],
    };
  }
}

/** Spend as stored: to a hundredth of a cent. */
const roundUsd = (usd: number) => Math.round(usd * 10_000) / 10_000;
