// End to end, the model proxy's body rule against the real Claude Code: with a key, every call
// Claude Code makes goes through the supervisor's proxy, which refuses any server tool but the
// one Claude Code sends. WebSearch is that one (its own Messages call carries the web search
// tool): allowed from the phone, the search reaches the upstream and the run finishes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startE2E, type E2E } from '../support/e2e.ts';
import { useScriptedModel } from '../support/scripted-model.ts';

const model = useScriptedModel();
let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({
    runnerSecrets: { ANTHROPIC_API_KEY: 'sk-ant-canary-TOOLS-0123456789' },
    podEnv: model.env(),
  });
}, 90_000);
afterAll(async () => e2e?.stop());

describe("end to end: Claude Code's own tools through the model proxy", () => {
  it("forwards WebSearch's web search call, and the run ends", { timeout: 180_000 }, async () => {
    const phone = e2e.phone('+14155550123');
    await phone.send('script:\ntool: WebSearch {"query":"tether kubernetes runner"}\nsay: searched the web');
    await phone.next(/🔐/, 60_000);
    await phone.send('allow');
    await phone.next(/searched the web/, 120_000);

    const searches = model.model.requests.filter((r) =>
      r.body?.tools?.some((tool) => (tool as { type?: string }).type?.startsWith('web_search_')),
    );
    expect(searches.map((r) => ({ path: r.path, status: r.response.status }))).toEqual([
      { path: '/v1/messages', status: 200 },
    ]);
    expect(model.calls('tether kubernetes runner')).toEqual([
      expect.objectContaining({ name: 'WebSearch', result: expect.objectContaining({ error: false }) }),
    ]);
  });
});
