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
