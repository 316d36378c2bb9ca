/**
 * YAML of the stateful agents (tealagents/v1alpha1, served on /v3 and AG-UI) that e2e tests write
 * again and again: one default agent on the fake model, told to be brief. A test names only what it
 * is about (an autonomy level, `on_busy`, a plugin), so what differs between tests stands out.
 */
export interface V3AgentOptions {
  /** Default 1. */
  version?: string | number;
  /** Default `{name} agent`; `null` leaves the description out. */
  description?: string | null;
  /** Default `gpt-test` (the fake OpenAI server); `local/echo` needs no model at all. */
  model?: string;
  /** Default `Be brief.`; `null` leaves the prompt out. */
  systemPrompt?: string | null;
  /** Plugin names on the agent, e.g. `['Notes']` (with a `custom_plugins.js` beside the YAML). */
  plugins?: string[];
  /** `spec.governance`, e.g. `{ autonomy_level: 'L1' }`. */
  governance?: Record<string, string | number>;
  /** `spec.concurrency`, e.g. `{ on_busy: 'enqueue' }`. */
  concurrency?: Record<string, string | number>;
}

export function v3Agent(name: string, o: V3AgentOptions = {}): string {
  const agent = [
    '    name: default',
    `    model: ${o.model ?? 'gpt-test'}`,
    ...(o.systemPrompt === null ? [] : [`    system_prompt: ${o.systemPrompt ?? 'Be brief.'}`]),
    ...(o.plugins ? [`    plugins: [${o.plugins.join(', ')}]`] : []),
  ];
  return [
    '',
    'apiVersion: tealagents/v1alpha1',
    `name: ${name}`,
    `version: ${o.version ?? 1}`,
    ...(o.description === null ? [] : [`description: ${o.description ?? `${name} agent`}`]),
    'spec:',
    '  agent:',
    ...agent,
    ...section('governance', o.governance),
    ...section('concurrency', o.concurrency),
    '',
  ].join('\n');
}

function section(key: string, fields: Record<string, string | number> | undefined): string[] {
  return fields ? [`  ${key}:`, ...Object.entries(fields).map(([k, v]) => `    ${k}: ${v}`)] : [];
}

/** The barest stateful agent: Assistant 0.1 on local/echo, no description, no prompt. */
export const ECHO_ASSISTANT = v3Agent('Assistant', { version: '0.1', description: null, model: 'local/echo', systemPrompt: null });

/** `custom_plugins.js` with one plugin, Notes, whose one tool `wipe` (default risk) answers `wiped {id}`. */
export const NOTES_WIPE_PLUGIN = `
const id = { type: 'object', properties: { id: { type: 'string' } }, additionalProperties: false };
exports.plugins = [{ name: 'Notes', tools: [
  { name: 'wipe', description: 'Deletes a note', parameters: id, handler: ({ id }) => 'wiped ' + id },
] }];
`;
