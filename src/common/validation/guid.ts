/**
 * A GUID (8-4-4-4-12 hex digits, either case): the shape of Entra tenant and object ids. The
 * environment check reads the configured tenants with it, token validation the `tid` and `oid` claims.
 */
export const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
