// The live-runner end-to-end tests' stack and words: the whole stack with a keep-alive and a watch
// on its runner Pods, a phone's Sessions and how each was bound, and a command that only says a word.
import { afterAll, beforeAll } from 'vitest';
import type { Session } from '../../common/session/schema.ts';
import { startE2E, type E2E, type E2EOptions, type Phone } from './e2e.ts';
import { watchRunnerPods, type RunnerPods } from './runner-pods.ts';

export interface LiveStack {
  e2e: E2E;
  pods: RunnerPods;
  /** The phone's Sessions, in arrival order. */
  sessionsOf(phone: Phone): Promise<Session[]>;
}

/** The stack for the file's tests (started before them, stopped after), with `keepAlive` on. */
export function useLiveStack(options: E2EOptions & { keepAlive: string }): LiveStack {
  const live = {
    sessionsOf: async (phone) => (await live.e2e.list()).filter((s) => s.spec.phone === phone.number),
  } as LiveStack;
  beforeAll(async () => {
    live.e2e = await startE2E(options);
    live.pods = await watchRunnerPods(live.e2e);
  }, 90_000);
  afterAll(async () => {
    live.pods?.stop();
    await live.e2e?.stop();
  });
  return live;
}

/** The lines of the stack's components and Pods logged at level error or fatal (none expected). */
export const errorsLogged = (e2e: E2E): string[] => e2e.logs().filter((line) => /"level":(50|60)\b/.test(line));

/** How each Session was bound: `<phase> <runnerStart> <podName>`. */
export const bindings = (sessions: Session[]): string[] =>
  sessions.map((s) => `${s.status?.phase} ${s.status?.runnerStart} ${s.status?.podName}`);

/** Sends a command whose agent says `<word> working` then `<word> done`, and waits for the result. */
export async function say(phone: Phone, word: string): Promise<void> {
  await phone.send(`script:\nprogress: ${word} working\nsay: ${word} done`);
  await phone.next(new RegExp(`^${word} done$`, 'm'));
}
