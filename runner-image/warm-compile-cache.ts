// Fills Node's compile cache (NODE_COMPILE_CACHE, which the image sets) with every module the runner
// Pod's two processes load, the agent SDK they load later included: at start neither strips types
// nor compiles. Node keeps one cache per user, so this runs as each user the Pod's containers run
// as (the image build; the local node agent before it runs Pods). Nothing here starts either process.
import { flushCompileCache, getCompileCacheDir } from 'node:module';

if (!getCompileCacheDir()) throw new Error('NODE_COMPILE_CACHE is not set: there is no compile cache to fill');
await import('./main.ts');
await import('./agent-host/main.ts');
await (await import('./agents/sdk.ts')).agentSdk();
// A kubeconfig file (a runner started outside a Pod) is read with it.
await import('yaml');
flushCompileCache();
