// The workspace's own dev servers: the one definition of "loopback" for the screenshot tool's
// policy and for what a page it opens may load.

/** Hosts that are this machine, as Chromium's proxy bypass list spells them. */
export const LOOPBACK_HOSTS = ['localhost', '127.0.0.0/8', '[::1]'] as const;

/** `localhost`, 127.0.0.0/8 or [::1] (the WHATWG parser has already normalised 0x7f.1 and the like). */
export function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/** An http(s) URL on a loopback host, any port. */
export function isLoopbackUrl(url: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  return (parsed.protocol === 'http:' || parsed.protocol === 'https:') && isLoopbackHost(parsed.hostname);
}
