// The text rules the Session schema and the components' configuration share: each written once
// (charts/tether/values.schema.json repeats some; test/unit/chart-config.test.ts holds it to these).

/** E.164: a plus, a non-zero digit, up to 15 digits in all. */
export const E164_PATTERN = '^\\+[1-9][0-9]{6,14}$';
/** A Go-style duration of whole units: 90s, 30m, 1h30m. */
export const DURATION_PATTERN = '^([0-9]+(h|m|s))+$';
/** A duration as above, or whole milliseconds (250ms): for the relay's shorter timings. */
export const DURATION_OR_MS_PATTERN = `${DURATION_PATTERN}|^[0-9]+ms$`;
/** An agent session id (a UUID from Claude Code): never an option or a path. */
export const AGENT_SESSION_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]*$';
const DNS_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
/** A Kubernetes DNS label (RFC 1123): a namespace, a claim name. */
export const DNS_LABEL_PATTERN = `^${DNS_LABEL}$`;
/** A Kubernetes DNS subdomain (RFC 1123): most object names. */
export const DNS_SUBDOMAIN_PATTERN = '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$';
/** A Kubernetes condition type: an optional DNS-subdomain prefix and a slash, then a name. */
export const CONDITION_TYPE_PATTERN = `^(${DNS_LABEL}(\\.${DNS_LABEL})*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`;
/** An http(s) URL without white space. */
export const HTTP_URL_PATTERN = '^https?://[^\\s]+$';
/** A proxy URL with no user or password: it reaches Claude Code's environment, the Pod spec, the admission policy. */
export const PROXY_URL_PATTERN = '^https?://[^\\s/@]+(/[^\\s@]*)?$';
/** A destination as the egress proxy names it: a lower-case host name, an IPv4 address, or an IPv6 one unbracketed. */
export const EGRESS_HOST_PATTERN =
  '^([a-z0-9_]([-a-z0-9_]*[a-z0-9_])?(\\.[a-z0-9_]([-a-z0-9_]*[a-z0-9_])?)*|[0-9a-f:.]*:[0-9a-f:.]*)$';
