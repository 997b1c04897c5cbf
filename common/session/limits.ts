// The Session's size limits: the CRD's schema, the relay and the runner hold every field within them.

export const LIMITS = {
  promptChars: 8192,
  decisions: 200,
  progressItems: 50,
  progressTextChars: 500,
  diffChars: 32768,
  textChars: 4000,
  /** A tool request's input as JSON, shown whole on the phone: about ten 1,600-character messages. */
  toolInputChars: 16384,
  media: 20,
  /** A host name (253) or an IPv6 literal, as the egress proxy names a destination. */
  egressHostChars: 253,
  /** Destinations a Session's status records (the proxy's metrics count them all). */
  egressRecords: 50,
  questions: 4,
  options: 8,
  conditions: 16,
  /** `diff <file>` requests a Session answers; file names listed for them. */
  diffRequests: 20,
  diffFileNames: 100,
  /** A file name in a `diff <file>` request or the list of names offered. */
  diffFileNameChars: 512,
  /** WhatsApp's limit for an image sent through Twilio: every picture for the phone stays within it. */
  mediaBytes: 5 * 1024 * 1024,
  /** Pictures one command may carry (Twilio delivers at most 10 media a message). */
  images: 10,
  /** A picture from the phone: Claude's 5 MB image limit applies to the base64 text, 4/3 of the bytes. */
  imageBytes: 3_750_000,
  /**
   * The pictures of one command as base64: the Messages API takes 32 MB a request, and the
   * conversation needs room too.
   */
  imagesBase64Bytes: 20_000_000,
} as const;

/** What the agent accepts as an image input. */
export const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/webp', 'image/gif'] as const;
