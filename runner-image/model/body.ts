// What a Messages API body may ask of the API. The API acts on the body from Anthropic's side:
// its web fetch tool fetches a URL the conversation names, the MCP connector (`mcp_servers`)
// connects to any server URL given, code execution runs code with network access there, and an
// image or document block with a `url` source is fetched. Anything in the Pod can call the model
// proxy, so each of these would be a way out around the egress proxy, with the install's key.
// Claude Code uses none of them: its tools are client tools (run in the agent container, through
// the egress proxy) and its WebSearch asks the API's web search tool, which queries Anthropic's
// search and fetches no URL of the caller's choosing. The body is checked as the API will read it:
// valid UTF-8, one JSON object, no key twice in any object (parsers differ on which one wins).

/** The Messages API's request size limit; a larger body is answered 413, as the API does. */
export const MESSAGES_API_MAX_BODY_BYTES = 32 * 1024 * 1024;

/**
 * The server tools Claude Code sends: WebSearch's own Messages call carries the web search tool.
 * Every other entry of `tools` must be a client tool (no `type`, or `custom`).
 */
const SERVER_TOOLS_CLAUDE_CODE_SENDS: ReadonlySet<string> = new Set(['web_search_20250305']);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const isObject = (value: unknown): value is Record<string, Json> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Names a caller-chosen word in a refusal only when it is a short identifier, never the body's text. */
const named = (value: unknown) =>
  typeof value === 'string' && /^[\w-]{1,64}$/.test(value) ? `"${value}"` : 'an unrecognised one';

/** Where the string token starting at `start` (its opening quote) ends: its closing quote. */
function stringEnd(text: string, start: number): number {
  let at = start + 1;
  for (let c = text[at]; c !== '"' && at < text.length; c = text[++at]) if (c === '\\') at++;
  return at;
}

/** The first key that appears twice in one object of this (valid) JSON text, or undefined. */
export function duplicateKey(text: string): string | undefined {
  const objects: Array<Set<string> | undefined> = [];
  for (let at = 0; at < text.length; at++) {
    const c = text[at];
    if (c === '{') objects.push(new Set());
    else if (c === '[') objects.push(undefined);
    else if (c === '}' || c === ']') objects.pop();
    else if (c === '"') {
      const end = stringEnd(text, at);
      const keys = objects.at(-1);
      // In valid JSON a string directly inside an object, not after a colon, is a key.
      let next = end + 1;
      while (' \t\n\r'.includes(text[next]!)) next++;
      if (keys && text[next] === ':') {
        const raw = text.slice(at + 1, end);
        const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
        if (keys.has(key)) return key;
        keys.add(key);
      }
      at = end;
    }
  }
  return undefined;
}

function toolRefusal(tools: Json): string | undefined {
  if (!Array.isArray(tools)) return '`tools` must be an array';
  for (const tool of tools) {
    if (!isObject(tool)) return 'each entry of `tools` must be an object';
    const type = tool.type;
    if (type === undefined || type === 'custom') continue;
    if (typeof type !== 'string' || !SERVER_TOOLS_CLAUDE_CODE_SENDS.has(type))
      return `the server tool of type ${named(type)} is not one Claude Code uses`;
  }
  return undefined;
}

/** A block anywhere in the body whose `source` is a URL the API would fetch. */
function urlSourceIn(value: Json): boolean {
  if (Array.isArray(value)) return value.some(urlSourceIn);
  if (!isObject(value)) return false;
  if (isObject(value.source) && value.source.type === 'url') return true;
  return Object.values(value).some(urlSourceIn);
}

/**
 * Why this body is not forwarded, or undefined for one Claude Code would send: a JSON object (UTF-8,
 * no key twice) with no `mcp_servers`, only client tools and the server tools Claude Code sends,
 * and no block with a `url` source.
 */
export function modelBodyRefusal(body: Buffer): string | undefined {
  let text: string;
  let parsed: Json;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(body);
    parsed = JSON.parse(text) as Json;
  } catch {
    return 'the body is not JSON';
  }
  if (!isObject(parsed)) return 'the body must be a JSON object';
  const twice = duplicateKey(text);
  if (twice !== undefined) return `the key ${named(twice)} appears twice in one object`;
  if ('mcp_servers' in parsed) return 'the MCP connector (`mcp_servers`) is not forwarded';
  if ('tools' in parsed) {
    const refused = toolRefusal(parsed.tools!);
    if (refused) return refused;
  }
  if (urlSourceIn(parsed)) return 'a block with a `url` source is not forwarded';
  return undefined;
}
