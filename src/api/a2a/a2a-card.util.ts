import type { Request } from 'express';
import { A2A_PROTOCOL_VERSION, AgentCard } from '@a2a-js/sdk';
import type { AgentDefinition } from '../../agents/config/agent-definition';
import { entraOptionsFrom } from '../../auth/entra/entra.options';
import type { EnvConfig } from '../../config/env.config';

/** The v0.3 JSON-RPC method names (`message/send`, ...) are served on the same endpoint (docs/a2a.md). */
export const A2A_LEGACY_VERSION = '0.3';
/** The security scheme's name in the card. */
export const SECURITY_SCHEME = 'entra';

const TEXT_ONLY = new Set(['BaseInput', 'BaseInputWithUserContext']);
const IMAGES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

/** Where an agent's card and endpoint are, below the server's base URL (`https://host`). */
export function a2aPaths(agent: Pick<AgentDefinition, 'prefix'>) {
  return { card: `${agent.prefix}/.well-known/agent-card.json`, endpoint: `${agent.prefix}/a2a` };
}

/** The media types a message may carry: text always (data parts are read as their JSON text), images when the agent reads images. */
export function inputModesOf(agent: Pick<AgentDefinition, 'inputType' | 'inputSchema'>): string[] {
  if (agent.inputSchema) return ['application/json', 'text/plain'];
  return TEXT_ONLY.has(agent.inputType) ? ['text/plain', 'application/json'] : ['text/plain', 'application/json', ...IMAGES];
}

/**
 * The agent's A2A card (A2A v1.0 AgentCard, as the SDK reads it): name, description, version, the
 * JSON-RPC endpoint (v1.0, and the v0.3 method names on the same URL), streaming, no push
 * notifications, skills from `metadata.skills`, and the security the server enforces: Entra bearer
 * tokens (OpenID Connect, the tenant's metadata URL; the required scopes, if any), none in dev mode.
 */
export function agentCardOf(agent: AgentDefinition, env: Pick<EnvConfig, 'auth'>, baseUrl: string): AgentCard {
  const url = `${baseUrl}${a2aPaths(agent).endpoint}`;
  const entra = env.auth.mode === 'entra';
  const metadata = agent.config.metadata;
  const skills = (metadata?.skills ?? []).map((s) => ({
    id: s.id,
    name: s.name,
    description: s.description,
    tags: s.tags,
    examples: s.examples ?? [],
    inputModes: s.input_modes ?? [],
    outputModes: s.output_modes ?? [],
  }));
  return AgentCard.fromJSON({
    name: agent.name,
    description: agent.description,
    version: agent.version,
    supportedInterfaces: [
      { url, protocolBinding: 'JSONRPC', protocolVersion: A2A_PROTOCOL_VERSION },
      { url, protocolBinding: 'JSONRPC', protocolVersion: A2A_LEGACY_VERSION },
    ],
    ...(metadata?.documentation_url ? { documentationUrl: metadata.documentation_url } : {}),
    capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: false },
    securitySchemes: entra
      ? {
          [SECURITY_SCHEME]: {
            openIdConnectSecurityScheme: {
              description: 'Microsoft Entra ID access token for this API, sent as Authorization: Bearer',
              openIdConnectUrl: entraOptionsFrom(env.auth).metadataUrl,
            },
          },
        }
      : {},
    securityRequirements: entra ? [{ schemes: { [SECURITY_SCHEME]: { list: env.auth.requiredScopes } } }] : [],
    defaultInputModes: inputModesOf(agent),
    defaultOutputModes: ['text/plain'],
    skills,
  });
}

/** The card as JSON on the wire. */
export function agentCardJson(card: AgentCard): unknown {
  return AgentCard.toJSON(card);
}

/** The server's base URL as the caller reached it (behind a proxy: its `X-Forwarded-*`, when Express trusts it). */
export function baseUrlOf(req: Pick<Request, 'protocol' | 'get'>): string {
  return `${req.protocol}://${req.get('host')}`;
}
