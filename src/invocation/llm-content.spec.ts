import { ASSISTANT_IMAGE_MARKER, historyToMessages, toLlmContent, userContextMessage } from './llm-content';

const PNG = 'data:image/png;base64,iVBORw0KGgo=';
const text = (content: string) => ({ content_type: 'text' as const, content });
const image = (content: string) => ({ content_type: 'image' as const, content });

describe('toLlmContent', () => {
  it('joins text-only items into one string, which every provider accepts', () => {
    expect(toLlmContent([text('one'), text('two')])).toBe('one\ntwo');
    expect(toLlmContent([text('only')])).toBe('only');
    expect(toLlmContent([text(''), text('b'), text('')])).toBe('\nb\n');
    expect(toLlmContent([])).toBe('');
  });

  it('turns an image anywhere, the last item included, into content parts', () => {
    expect(toLlmContent([text('a'), text('b'), image(PNG)])).toEqual([
      { type: 'text', text: 'a' },
      { type: 'text', text: 'b' },
      { type: 'image_url', image_url: { url: PNG } },
    ]);
  });

  it('turns items with an image into content parts, in order', () => {
    expect(toLlmContent([text('look'), image(PNG), text('and this')])).toEqual([
      { type: 'text', text: 'look' },
      { type: 'image_url', image_url: { url: PNG } },
      { type: 'text', text: 'and this' },
    ]);
  });
});

describe('userContextMessage', () => {
  it('renders upstream’s exact text: a header line, then "  key: value" lines, each ending in a newline', () => {
    // Pinned by upstream's own test (test_augment_user_context).
    expect(userContextMessage({ City: 'New York', Team: 'AI Team' })).toEqual({
      role: 'user',
      content: 'The following user context was provided:\n  City: New York\n  Team: AI Team\n',
    });
  });

  it('adds nothing for an absent or empty context', () => {
    expect(userContextMessage(undefined)).toBeUndefined();
    expect(userContextMessage({})).toBeUndefined();
  });
});

describe('historyToMessages', () => {
  it('keeps roles and order; user images become parts', () => {
    expect(
      historyToMessages([
        { role: 'user', items: [text('hi')] },
        { role: 'assistant', items: [text('hello'), text('there')] },
        { role: 'user', items: [text('see'), image(PNG)] },
      ]),
    ).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello\nthere' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'see' },
          { type: 'image_url', image_url: { url: PNG } },
        ],
      },
    ]);
  });

  it('keeps an assistant image as a marker, not as base64 text in the prompt', () => {
    expect(historyToMessages([{ role: 'assistant', items: [text('here:'), image(PNG)] }])).toEqual([
      { role: 'assistant', content: `here:\n${ASSISTANT_IMAGE_MARKER}` },
    ]);
  });
});
