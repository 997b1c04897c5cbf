// The runner image's two users: the one definition the image, the Pod builder and the config's defaults share.
/**
 * The image's supervisor uid (the runner container, the Pod's only holder of a credential); the default of
 * TETHER_RUNNER_UID.
 */
export const RUNNER_UID = 1000;
/**
 * The image's agent uid (Claude Code and what it runs: another user, in the Pod's group); the default of
 * TETHER_RUNNER_AGENT_UID.
 */
export const AGENT_UID = 1001;
