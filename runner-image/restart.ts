// A run that survives its Pod: what a replacement runner (status.runnerRestarts ≥ 1) finds on its Session and
// what it tells the phone and the agent's resumed conversation. The scripted model reads the prompt's mark too.
import type { Decision, Pending, Phase, Session } from '../common/session/schema.ts';
import type { Effect } from '../common/session/state-machine.ts';
import type { AgentImage } from './agents/types.ts';
import { continuePrompt } from './continue-prompt.ts';
import { revision } from './plan-revision.ts';
import { Requests, type Answered } from './requests.ts';
import { prepareWorkspace, type StartDeps } from './start.ts';

/** The one line the phone gets when a replacement runner takes the run over. */
export const RESTART_LINE = 'The runner restarted; continuing where it stopped';

/** Why a runner stops when the Session names another Pod: the controller handed the run to a replacement. */
export const REPLACED = 'replaced';

/** Signals that take the Pod away (a delete, an eviction, a drain): a first loss the controller replaces. */
const POD_GOING = new Set(['SIGTERM', 'SIGINT']);

/**
 * Why a run stopped here is left as it is for a replacement runner, or undefined when this runner ends it (the
 * replacement's own loss ends the run, as the controller's second PodLost would).
 */
export function leftForReplacement(reason: string, found: Session, ownPod: string | undefined): string | undefined {
  const { podName, runnerRestarts } = found.status ?? {};
  if (reason === REPLACED || (ownPod && podName && podName !== ownPod))
    return `the run goes on in runner Pod ${podName}; this one leaves it`;
  if (POD_GOING.has(reason) && (runnerRestarts ?? 0) < 1)
    return 'the runner Pod is going: the run is left for the new runner Pod that continues it';
  return undefined;
}

/** The phases a replacement runner picks up where the lost one stopped; Starting simply starts. */
export type RestartPhase = Extract<Phase, 'Working' | 'AwaitingApproval' | 'Publishing'>;

export function restartedIn(session: Session): RestartPhase | undefined {
  const { phase, runnerRestarts } = session.status ?? {};
  if (!runnerRestarts || runnerRestarts < 1) return undefined;
  return phase === 'Working' || phase === 'AwaitingApproval' || phase === 'Publishing' ? phase : undefined;
}

/** What the phone answered to a request the lost runner raised, told to the resumed agent in its own words. */
export function answerWords(pending: Pending, decision: Decision): string {
  const said = decision.message?.trim();
  switch (pending.kind) {
    case 'tool':
      return decision.action === 'allow'
        ? `The user allowed your ${pending.tool} call; make it again.`
        : `The user denied your ${pending.tool} call${said ? `: ${said}` : '.'}`;
    case 'question': {
      const answers = Object.entries(decision.answers ?? {}).map(([q, a]) => `"${q}" → "${a}"`);
      const words = answers.length ? answers.join('; ') : said;
      return words ? `The user answered your question: ${words}.` : 'The user did not answer. Do not assume an answer.';
    }
    case 'plan':
      return decision.action === 'revise' ? revision(decision.message) : 'The user approved your plan; carry it out.';
    default:
      return '';
  }
}

/** A plan approved earlier in this Session: the resumed agent carries it out instead of planning again. */
export const planApproved = (session: Session) =>
  (session.spec.decisions ?? []).some((d) => d.requestId.startsWith('plan-') && d.action === 'approve');

/** A run as the replacement runner continues it (runner.ts). */
export interface AgentRun {
  prompt: string;
  images?: AgentImage[];
  mode: 'run' | 'plan';
  resume?: string;
  /** The request answered for the lost runner, answered again if the resumed agent repeats it. */
  answered?: Answered;
  /** What the run spent before the restart. */
  spentBefore?: number;
}

export interface Resumable {
  readonly session: Session;
  readonly deps: StartDeps;
  readonly stop: AbortController;
  firstRun(): Promise<void>;
  runAgent(run: AgentRun): Promise<void>;
  publishReviewed(): Promise<void>;
  revertIf(due: readonly Effect[]): Promise<void>;
}

/** A replacement runner (its Pod was lost): on from where the lost one stopped, said once to the phone. */
export async function resumeRun(phase: RestartPhase, runner: Resumable): Promise<void> {
  const { status } = runner.deps;
  const { spec, status: found } = runner.session;
  status.addProgress(RESTART_LINE);
  if (!(await prepareWorkspace(runner.deps, spec, true))) return;
  if (phase === 'Publishing') return runner.publishReviewed();
  const pending = phase === 'AwaitingApproval' ? found?.pending : undefined;
  const requests = new Requests(status, runner.stop.signal);
  if (pending?.kind === 'changes') {
    const { effects } = await requests.adopt(pending, (due) => runner.revertIf(due));
    if (effects.includes('Publish')) await runner.publishReviewed();
    return;
  }
  const decided = pending && (await requests.adopt(pending));
  if (decided && !decided.effects.includes('ResumeAgent')) return;
  const answered = decided && { pending: pending!, decision: decided.decision };
  const id = found?.result?.agentSessionId;
  if (!id) return runner.firstRun();
  const mode = spec.mode === 'plan' && !planApproved(status.session ?? runner.session) ? 'plan' : 'run';
  const prompt = continuePrompt(answered && answerWords(answered.pending, answered.decision));
  await runner.runAgent({ prompt, mode, resume: id, answered, spentBefore: found?.result?.costUsd });
}
