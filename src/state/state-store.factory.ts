import type { EnvConfig } from '../config/env.config';
import { MemoryStateStore } from './backends/memory/memory.state-store';
import { StateStore } from './state-store';

/** The StateStore that TA_STATE_STORE selects. */
export async function createStateStore(config: EnvConfig['state']): Promise<StateStore> {
  switch (config.store) {
    case 'memory':
      return new MemoryStateStore();
    default:
      throw new Error(`TA_STATE_STORE=${config.store} is not available yet`);
  }
}
