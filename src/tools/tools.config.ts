import type { ToolsConfig } from '../config/env.config';

/** The tool settings where nothing configures them (an AgentRunner built without the environment's). */
export const DEFAULT_TOOLS_CONFIG: ToolsConfig = { timeoutMs: 30_000, maxRetries: 2, retryBaseMs: 200 };
