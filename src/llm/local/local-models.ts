import { LlmClient } from '../llm-client.port';
import { ECHO_MODEL, EchoLlmClient } from './echo.llm-client';

/** The built-in offline models, by the `local/...` name an agent's `model` uses. */
export const LOCAL_MODELS: ReadonlyMap<string, () => LlmClient> = new Map([[ECHO_MODEL, () => new EchoLlmClient()]]);

export function isLocalModel(model: string): boolean {
  return model.startsWith('local/');
}

export function isKnownLocalModel(model: string): boolean {
  return LOCAL_MODELS.has(model);
}
