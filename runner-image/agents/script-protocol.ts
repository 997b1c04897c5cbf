// Marks the scripted agent's protocol lines on stdout (followed by the per-run nonce).
export const MARK = '\u0001tether:';
