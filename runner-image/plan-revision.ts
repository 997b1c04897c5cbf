// A plan answered with changes (decision action revise): what the agent is told, so that it plans
// again in plan mode; the scripted model reads the user's words back out of it.
const WORDS = 'Their words:';
const NEXT = 'Stay in plan mode:';

/** The refusal of ExitPlanMode the agent reads: the user's words, and to present a revised plan. */
export function revision(words: string | undefined): string {
  return [
    `The user wants changes to this plan before anything is done. ${WORDS}`,
    words?.trim() || '(none given)',
    `${NEXT} revise the plan to take this into account, then present the whole revised plan again with ExitPlanMode.`,
  ].join('\n');
}

/** The user's words in a revision() text (as it comes back in a tool result), or undefined for another refusal. */
export function revisionWords(refusal: string): string | undefined {
  const start = refusal.indexOf(WORDS);
  const end = refusal.lastIndexOf(`\n${NEXT}`);
  if (start < 0 || end < start) return undefined;
  return refusal.slice(start + WORDS.length, end).trim();
}
