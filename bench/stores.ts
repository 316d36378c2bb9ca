/** The state stores the benchmark runs against; each entry is the env that selects it. */
export interface StoreEnv {
  name: string;
  env: Record<string, string>;
}

export async function startBenchStores(): Promise<{ envs: StoreEnv[]; stop: () => Promise<void> }> {
  return { envs: [{ name: 'memory', env: { TA_STATE_STORE: 'memory' } }], stop: async () => undefined };
}
