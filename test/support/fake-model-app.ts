import { FakeOpenAi, startFakeOpenAi } from './fake-openai.server';
import { startTestApp, TestApp, TestAppOptions } from './test-app';

export interface FakeModelApp {
  llm: FakeOpenAi;
  t: TestApp;
  close(): Promise<void>;
}

/** Env that points the app's model provider at a fake OpenAI-compatible server (no SDK retries). */
export function fakeModelEnv(llm: FakeOpenAi, extra: Record<string, string> = {}): Record<string, string> {
  return { TA_BASE_URL: llm.baseURL, TA_API_KEY: 'sk-test', TA_LLM_MAX_RETRIES: '0', ...extra };
}

/** The real app on a scripted fake model: the common setup of the e2e tests of agents. */
export async function startFakeModelApp(options: Omit<TestAppOptions, 'env'> & { env?: Record<string, string> }): Promise<FakeModelApp> {
  const llm = await startFakeOpenAi();
  // An app that fails to boot must not leave the model server listening: the file's afterAll has
  // no handle to close it by, and the open server would keep Jest from exiting.
  const t = await startTestApp({ ...options, env: fakeModelEnv(llm, options.env) }).catch(async (error: unknown) => {
    await llm.close();
    throw error;
  });
  return {
    llm,
    t,
    close: async () => {
      await t.close();
      await llm.close();
    },
  };
}
