/** AG-UI's protobuf media type (`AGUI_MEDIA_TYPE` of `@ag-ui/proto`, not imported: it loads protobuf). */
export const AG_UI_PROTO_MEDIA_TYPE = 'application/vnd.ag-ui.event+proto';
const SSE_MEDIA_TYPE = 'text/event-stream';

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
}

/**
 * Whether an AG-UI run is answered in protobuf rather than server-sent events: only when `Accept`
 * gives `application/vnd.ag-ui.event+proto` a higher q-value than `text/event-stream`. Each of the
 * two takes the q of the most specific range that matches it (RFC 9110 §12.5.1), so `*\/*` alone,
 * which curl and fetch send by default, gives both the same and means SSE, as does no `Accept` or
 * a tie. (`@ag-ui/encoder`'s own negotiation answers protobuf to anything that merely accepts it,
 * `*\/*` included.) Media type parameters other than `q` are ignored, and so is a range with an
 * unreadable `q`.
 */
export function prefersProtobuf(accept: string | undefined): boolean {
  if (!accept) return false;
  const ranges = accept.split(',').flatMap(parseRange);
  return qualityOf(AG_UI_PROTO_MEDIA_TYPE, ranges) > qualityOf(SSE_MEDIA_TYPE, ranges);
}

function parseRange(text: string): MediaRange[] {
  const [mediaType = '', ...params] = text.split(';').map((p) => p.trim().toLowerCase());
  const [type, subtype, ...rest] = mediaType.split('/');
  if (!type || !subtype || rest.length) return [];
  let q = 1;
  for (const param of params) {
    const [name, value = ''] = param.split('=').map((s) => s.trim());
    if (name !== 'q') continue;
    if (!/^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(value)) return [];
    q = Number(value);
  }
  return [{ type, subtype, q }];
}

/** The q of the most specific range matching `mediaType` (exact, then `type/*`, then `*\/*`); 0 when none does. */
function qualityOf(mediaType: string, ranges: MediaRange[]): number {
  const [type, subtype] = mediaType.split('/');
  let best: { specificity: number; q: number } | undefined;
  for (const r of ranges) {
    const specificity = r.type === type && r.subtype === subtype ? 2 : r.type === type && r.subtype === '*' ? 1 : r.type === '*' && r.subtype === '*' ? 0 : -1;
    if (specificity < 0 || (best && best.specificity > specificity)) continue;
    // Of equally specific ranges (a repeated type), the highest q.
    if (!best || specificity > best.specificity || r.q > best.q) best = { specificity, q: r.q };
  }
  return best?.q ?? 0;
}
