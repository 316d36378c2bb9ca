/** Tool settings from the environment (docs/tools.md lists the variables). */
export interface ToolsConfig {
  /** TA_TOOL_TIMEOUT_MS: per call attempt, unless the tool's source sets its own. */
  timeoutMs: number;
  /** TA_TOOL_MAX_RETRIES: extra attempts after a transient failure. */
  maxRetries: number;
  /** TA_TOOL_RETRY_BASE_MS: first backoff delay; doubled on each further attempt. */
  retryBaseMs: number;
  /** TA_PLUGIN_MODULE: a plugin module file, or a directory of them. */
  pluginModule?: string;
  /** TA_REMOTE_PLUGIN_PATH: the remote (OpenAPI) plugin catalog YAML. */
  remotePluginPath?: string;
  /** TA_PLUGIN_CATALOG_FILE: upstream's plugin catalog JSON (governance per tool). */
  pluginCatalogFile?: string;
}

export const DEFAULT_TOOLS_CONFIG: ToolsConfig = { timeoutMs: 30_000, maxRetries: 2, retryBaseMs: 200 };
