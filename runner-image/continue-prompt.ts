// The user turn that resumes a conversation a lost runner Pod cut off (restart.ts); the scripted model knows it by
// its mark and plays its scenario on from where it stopped.

/** Opens every prompt that continues a conversation cut off by the restart. */
export const CONTINUE_MARK = '[Tether: the runner restarted]';

export const isContinuePrompt = (text: string) => text.trimStart().startsWith(CONTINUE_MARK);

/** The short user turn that resumes the conversation, with the answer the phone gave meanwhile. */
export function continuePrompt(answer?: string): string {
  return (
    `${CONTINUE_MARK} The runner was restarted and your last turn was cut off. ` +
    (answer ? `${answer} ` : '') +
    'Continue the task where you stopped; the checkout still holds your changes so far.'
  );
}
