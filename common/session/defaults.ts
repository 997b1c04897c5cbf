// What a Session gets when nobody says otherwise. The relay and the controller read the same
// variables (TETHER_MAX_QUEUED, TETHER_RUN_TIMEOUT, TETHER_APPROVAL_TIMEOUT), which the chart sets
// from its `sessions` values; these are their values when unset.

export interface SessionDefaults {
  /** Commands a phone may have waiting while one runs. */
  maxQueued: number;
  /** spec.timeouts of a Session that has none. */
  timeouts: { run: string; approval: string };
}

export const SESSION_DEFAULTS: SessionDefaults = {
  maxQueued: 5,
  timeouts: { run: '60m', approval: '30m' },
};

/** The largest TETHER_MAX_QUEUED accepted (the chart's values schema says the same). */
export const MAX_QUEUED_CEILING = 50;

/**
 * How long a runner Pod may take to start (pulled, scheduled, volume attached, runner Working)
 * before its Session fails with the reason. The user must hear within 3 minutes; this leaves
 * the relay the rest.
 */
export const RUNNER_START_TIMEOUT = '2m';

/** The branch a Session starts from when its repository names none. */
export const DEFAULT_BASE_BRANCH = 'main';
