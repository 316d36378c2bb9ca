import type { ModelField, TypeDecl, TypeNode } from './model-types';

/**
 * Upstream's own models (`sk_agents/ska_types.py`) that a `custom_types.py` imports and uses as
 * field types or base classes: `class GeneralInput(BaseInput)`, `chat_history: list[HistoryMessage]`,
 * `embedded_image: EmbeddedImage`. Field for field as upstream declares them.
 */
const ref = (name: string): TypeNode => ({ k: 'ref', name });
const optional = (t: TypeNode): TypeNode => ({ k: 'union', options: [t, { k: 'none' }] });
const field = (name: string, type: TypeNode, extra: Partial<ModelField> = {}): ModelField => ({ name, type, required: true, ...extra });
const optionalField = (name: string, type: TypeNode): ModelField => ({ name, type: optional(type), required: false, default: null });
const role: TypeNode = { k: 'literal', values: ['user', 'assistant'] };
const chatHistory = (item: string) => optionalField('chat_history', { k: 'list', item: ref(item) });
const userContext = optionalField('user_context', { k: 'dict', value: { k: 'str' } });

const DECLS: TypeDecl[] = [
  { kind: 'enum', name: 'ContentType', values: ['image', 'text'] },
  { kind: 'model', name: 'EmbeddedImage', fields: [field('format', { k: 'str' }), field('data', { k: 'str' })] },
  { kind: 'model', name: 'BaseEmbeddedImage', fields: [field('embedded_image', ref('EmbeddedImage'))] },
  {
    kind: 'model',
    name: 'MultiModalItem',
    fields: [field('content_type', ref('ContentType'), { required: false, default: 'text' }), field('content', { k: 'str' })],
  },
  {
    kind: 'model',
    name: 'HistoryMultiModalMessage',
    fields: [field('role', role), field('items', { k: 'list', item: ref('MultiModalItem') })],
    // Upstream's model_validator(mode="before"): {role, content} is read as one text item.
    before: (v) => {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
      const o = v as Record<string, unknown>;
      if (!('content' in o) || 'items' in o) return v;
      const { content, ...rest } = o;
      return { ...rest, items: [{ content_type: 'text', content }] };
    },
  },
  {
    kind: 'model',
    name: 'HistoryMessage',
    description:
      "A single interaction in a chat history.<br/>\n'role' - Either 'user' (requestor) or 'assistant' (responder) indicating\nwho sent the message.<br/>\n'content' - The content of the message",
    fields: [field('role', role), field('content', { k: 'str' })],
  },
  {
    kind: 'model',
    name: 'BaseInput',
    description: 'The history of a chat interaction between an automated assistant and a\nhuman.',
    fields: [chatHistory('HistoryMessage')],
  },
  {
    kind: 'model',
    name: 'BaseInputWithUserContext',
    description: 'The history of a chat interaction between an automated assistant and a\nhuman, along with context about the user.',
    fields: [chatHistory('HistoryMessage'), userContext],
  },
  {
    kind: 'model',
    name: 'BaseMultiModalInput',
    fields: [optionalField('session_id', { k: 'str' }), chatHistory('HistoryMultiModalMessage')],
  },
  {
    kind: 'model',
    name: 'BaseMultiModalInputWithUserContext',
    description:
      'The history of a chat interaction between an automated assistant and a\nhuman with multimodal input (text and images),\nalong with context about the user.',
    fields: [optionalField('session_id', { k: 'str' }), chatHistory('HistoryMultiModalMessage'), userContext],
  },
];

/** By name. */
export const SKA_TYPES: ReadonlyMap<string, TypeDecl> = new Map(DECLS.map((d) => [d.name, d]));

/** The module a custom types file imports them from. */
export const SKA_TYPES_MODULE = 'sk_agents.ska_types';
