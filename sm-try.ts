import { query } from '@anthropic-ai/claude-agent-sdk';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { startScriptedModel } from './runner-image/scripted-model/server.ts';
const model = await startScriptedModel();
const dir = '/tmp/explore/sm'; rmSync(dir, { recursive: true, force: true }); mkdirSync(`${dir}/home/.claude`, { recursive: true }); mkdirSync(`${dir}/repo`, { recursive: true });
writeFileSync(`${dir}/repo/README.md`, '# old\n');
const prompt = process.argv[2]!.replace(/\\n/g, '\n');
const t0 = Date.now();
const q = query({ prompt, options: { cwd: `${dir}/repo`, model: 'claude-sonnet-4-5', settingSources: [], permissionMode: (process.argv[3] as 'plan') ?? 'default',
  env: { PATH: process.env.PATH!, HOME: `${dir}/home`, CLAUDE_CONFIG_DIR: `${dir}/home/.claude`, ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: 'x', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' },
  canUseTool: async (n, input) => { console.log('canUseTool', n, JSON.stringify(input).slice(0, 200)); return n === 'AskUserQuestion' ? { behavior: 'allow', updatedInput: { ...input, answers: { [(input.questions as { question: string }[])[0]!.question]: 'B' } } } : { behavior: 'allow', updatedInput: input }; } } });
try { for await (const m of q) console.log(Date.now() - t0, m.type, (m as { subtype?: string }).subtype ?? '', JSON.stringify((m as { message?: { content: unknown } }).message?.content ?? (m as { result?: string }).result ?? '').slice(0, 250)); } catch (e) { console.log('THROW', (e as Error).message); }
console.log(model.requests.map((r) => `${r.path} side=${r.side} ${r.response.status} ${r.response.tool?.name ?? ''} ${r.response.text ?? r.response.error ?? ''}`.slice(0, 200)).join('\n'));
await model.close();
