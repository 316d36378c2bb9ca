/** What each platform server answers to GET /x: a small JSON object, the size of a health answer. */
export const PAYLOAD = { status: 'ok', id: '00000000-0000-4000-8000-000000000000' };
