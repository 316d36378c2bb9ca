/**
 * A request URL without its query string: what `url.split('?')[0]` gives, without making an array
 * of the parts (every request's access line and idempotency key take it; issue 27).
 */
export function pathOf(url: string): string {
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}
