// What the local stack isolates depends on who runs it: as root, each Pod's containers run as host
// ids of the Pod's own (node-agent/identity.ts) and the stack's state is closed to them; as anyone
// else, every container runs as that one user, so nothing separates one phone's agent from another's
// or from the stack, and no agent gets a network of its own: egress is not enforced. `make dev` says
// so loudly.
const BAR = '!'.repeat(94);

/** The warning for a stack that cannot isolate its agents; undefined as root. */
export function notIsolatedWarning(uid = process.getuid?.()): string | undefined {
  if (uid === 0) return undefined;
  return [
    BAR,
    `!! NOT ISOLATED: make dev runs as uid ${uid ?? 'unknown'}, not root, so every agent runs as this same user.`,
    '!! Agents are not isolated from each other or from the stack: any agent can read and change other',
    "!! phones' workspaces, transcripts and branches, the stack's logs and journal, and its credentials",
    "!! (the control plane's certificates, the runner Secret). Use it with repositories and phones you trust.",
    '!! EGRESS NOT ENFORCED: without root no agent gets a network namespace of its own, so an agent reaches',
    '!! everything this machine reaches; the egress proxy sees only what chooses to use it.',
    '!! Run make dev as root (as CI does) to give each Pod users and a network of its own.',
    BAR,
    '',
  ].join('\n');
}
