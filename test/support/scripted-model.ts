// The scripted model run by the test itself (the runner gets ANTHROPIC_BASE_URL), so a test can
// read what the real Claude Code sent it: the conversation of one command, and the tool results.
import { afterAll, beforeAll } from 'vitest';
import { readConversation, type ToolCall } from '../../runner-image/scripted-model/conversation.ts';
import {
  startScriptedModel,
  type RecordedRequest,
  type ScriptedModel,
} from '../../runner-image/scripted-model/server.ts';

export interface TestModel {
  model: ScriptedModel;
  /** The runner's environment for this model. */
  env(): Record<string, string>;
  /** Requests of the conversation whose latest prompt contains `marker` (side requests left out). */
  turns(marker: string): RecordedRequest[];
  /** The tool calls Claude Code reported back in that conversation, with their results. */
  calls(marker: string): ToolCall[];
}

export function useScriptedModel(): TestModel {
  const test = {} as TestModel;
  beforeAll(async () => {
    test.model = await startScriptedModel();
  });
  afterAll(async () => test.model?.close());
  test.env = () => ({ ANTHROPIC_BASE_URL: test.model.url });
  test.turns = (marker) =>
    test.model.requests.filter((r) => !r.side && r.body && readConversation(r.body).prompt.includes(marker));
  test.calls = (marker) => {
    const last = test.turns(marker).at(-1);
    return last?.body ? readConversation(last.body).calls : [];
  };
  return test;
}
